/**
 * Opaque cursors (ids are in ids.ts).
 *
 * A job cursor names its job and one absolute offset per stream, so a cursor from another job
 * is recognised (INVALID_ARGUMENT) and reading behind retention is detected (OUTPUT_EXPIRED).
 */
import { PaddockError } from '../shared/errors.js';

/** Where a read of a job continues. */
export interface JobCursor {
  jobId: string;
  stdout: number;
  stderr: number;
}

/** Encodes a job cursor as an opaque, URL-safe string. */
export function encodeJobCursor(c: JobCursor): string {
  return `j.${Buffer.from(`${c.jobId}:${c.stdout}:${c.stderr}`).toString('base64url')}`;
}

/** Decodes a job cursor and checks that it belongs to `jobId`. */
export function decodeJobCursor(cursor: string, jobId: string): JobCursor {
  const bad = () =>
    new PaddockError(
      'INVALID_ARGUMENT',
      'The cursor is not one read_job returned; pass the nextCursor of the previous read, or omit it to start at the oldest output.',
    );
  if (!cursor.startsWith('j.')) throw bad();
  const text = Buffer.from(cursor.slice(2), 'base64url').toString('utf8');
  const m = /^(g\d+\.job\d+):(\d{1,15}):(\d{1,15})$/.exec(text);
  if (!m) throw bad();
  if (m[1] !== jobId) {
    throw new PaddockError(
      'INVALID_ARGUMENT',
      `This cursor belongs to job ${m[1]}, not ${jobId}; use cursors only with the job that returned them.`,
    );
  }
  return { jobId, stdout: Number(m[2]), stderr: Number(m[3]) };
}

/** Encodes a log cursor (the sequence number after which to continue). */
export function encodeLogCursor(seq: number): string {
  return `l.${seq.toString(36)}`;
}

/** Decodes a log cursor. */
export function decodeLogCursor(cursor: string): number {
  const m = /^l\.([0-9a-z]{1,12})$/.exec(cursor);
  if (!m) {
    throw new PaddockError(
      'INVALID_ARGUMENT',
      'The cursor is not one read_logs returned; pass its nextCursor, or omit it to start at the oldest entry.',
    );
  }
  return Number.parseInt(m[1]!, 36);
}
