/**
 * File operations of the computer tools, executed by the guest agent: encoding rules, limits,
 * UTF-8 boundaries. Each operation carries the policy's file scope: the guest walks the path
 * within it and refuses (POLICY_DENIED, nothing touched) when a link or the object reached lies
 * outside, so the decision is made on what is touched when it is touched.
 */

import type { FileScope } from '../guest/path-scope.js';
import type { CallResult } from '../guest/protocol.js';
import { policyDeniedError } from '../policy/decision.js';
import { isPaddockError, PaddockError } from '../shared/errors.js';
import { utf8SafeLength } from '../shared/text.js';
import type { Generation } from './generation/generation.js';
import type { WithAttachment } from './link/guest-client.js';
import { checkGuestPath } from './paths.js';

/** Most bytes one write_file may write. */
export const MAX_WRITE_BYTES = 65_536;
/** Most bytes one read_file may return. */
export const MAX_READ_BYTES = 65_536;

export type FileEncoding = 'utf8' | 'base64';

/** One directory entry. */
export interface FileEntry {
  [key: string]: unknown;
  name: string;
  path: string;
  type: 'file' | 'dir' | 'symlink' | 'other';
  size: number;
  mtimeMs: number;
  /** Permission bits as an octal string, e.g. "644". */
  mode: string;
}

/**
 * Runs a file operation of the guest; its refusal becomes the policy's POLICY_DENIED error for
 * the action (the rule, and which links led where, in the message and the audit row).
 */
export async function scopedCall<T>(scope: FileScope, path: string, call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (e) {
    if (isPaddockError(e) && e.code === 'POLICY_DENIED') {
      const type = scope.kind === 'read' ? 'file.read' : 'file.write';
      const denial = policyDeniedError(
        { type, path },
        { allow: false, rule: String(e.details.rule ?? 'default-deny'), reason: e.message },
      );
      throw new PaddockError('POLICY_DENIED', denial.message, {
        ...denial.details,
        links: e.details.links ?? [],
      });
    }
    throw e;
  }
}

/** A page of a directory listing (`path` reached within `scope`). */
export async function listDirectory(
  c: Generation,
  scope: FileScope,
  path: string,
  offset: number,
  limit: number,
) {
  checkGuestPath(path);
  const r = await scopedCall(scope, path, () => c.call('fs.list', { path, scope, offset, limit }));
  const entries: FileEntry[] = r.entries.map((e) => ({
    name: e.name,
    path: path === '/' ? `/${e.name}` : `${path}/${e.name}`,
    type: e.type,
    size: e.size,
    mtimeMs: e.mtimeMs,
    mode: e.mode.toString(8).padStart(3, '0'),
  }));
  const nextOffset = offset + entries.length;
  const page = {
    path,
    entries,
    total: r.total,
    offset,
    nextOffset: nextOffset < r.total ? nextOffset : null,
  };
  return { page, rule: r.rule };
}

// ignoreBOM: a leading BOM stays in the text, as the file has it
const fatalUtf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/** What the guest answered to one fs.read, with the bytes. */
export type RawRead = WithAttachment<CallResult<'fs.read'>>;

/** Reads raw bytes of a file inside the guest (`path` reached within `scope`). */
export function fetchGuestFile(
  c: Generation,
  scope: FileScope,
  path: string,
  offset: number,
  byteLimit: number,
): Promise<RawRead> {
  checkGuestPath(path);
  return scopedCall(scope, path, () => c.call('fs.read', { path, scope, offset, byteLimit }));
}

/**
 * The read_file answer for raw bytes: UTF-8 text or base64. A text read never ends inside a
 * UTF-8 sequence (nextOffset stops before it) and refuses bytes that are not UTF-8.
 */
export function renderRead(path: string, encoding: FileEncoding, offset: number, raw: RawRead) {
  let bytes = raw.attachment ?? Buffer.alloc(0);
  let text: string | undefined;
  if (encoding === 'utf8') {
    const atEof = offset + bytes.length >= raw.size;
    bytes = bytes.subarray(0, atEof ? bytes.length : utf8SafeLength(bytes));
    try {
      text = fatalUtf8.decode(bytes);
    } catch {
      throw new PaddockError(
        'INVALID_ARGUMENT',
        `${path} is not valid UTF-8 between bytes ${offset} and ${offset + bytes.length}; read it with encoding "base64" (or start at a character boundary).`,
      );
    }
  }
  const nextOffset = offset + bytes.length;
  return {
    path,
    encoding,
    content: text ?? bytes.toString('base64'),
    offset,
    bytesRead: bytes.length,
    nextOffset,
    size: raw.size,
    eof: nextOffset >= raw.size,
  };
}

const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/** Decodes write_file content; INVALID_ARGUMENT for bad base64 or more than 64 KiB. */
export function decodeContent(content: string, encoding: FileEncoding): Buffer {
  if (encoding === 'base64' && !BASE64.test(content)) {
    throw new PaddockError(
      'INVALID_ARGUMENT',
      'content is not standard base64 (A-Z, a-z, 0-9, +, /, padded with =, no whitespace); fix the encoding or send text with encoding "utf8".',
    );
  }
  const bytes = Buffer.from(content, encoding === 'base64' ? 'base64' : 'utf8');
  if (bytes.length > MAX_WRITE_BYTES) {
    throw new PaddockError(
      'INVALID_ARGUMENT',
      `content decodes to ${bytes.length} bytes, more than the ${MAX_WRITE_BYTES} a write may hold; split the file and append the rest with run_command.`,
    );
  }
  return bytes;
}

/** Creates or replaces a file atomically inside the guest (where `path` leads within `scope`). */
export async function writeGuestFile(
  c: Generation,
  scope: FileScope,
  path: string,
  bytes: Buffer,
  overwrite: boolean,
) {
  checkGuestPath(path);
  const r = await scopedCall(scope, path, () =>
    c.call('fs.write', { path, scope, overwrite }, { attachment: bytes }),
  );
  return { path, bytesWritten: r.bytesWritten, created: r.created, rule: r.rule };
}

/** The canonical path of a directory reached within `scope`. */
export async function resolveGuestDir(c: Generation, scope: FileScope, path: string, signal?: AbortSignal) {
  checkGuestPath(path);
  return scopedCall(scope, path, () => c.call('fs.resolve', { path, scope }, { signal }));
}
