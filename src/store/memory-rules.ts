/** What every memory store checks of what it is given, so each refuses the same input alike. */
import { PaddockError } from '../shared/errors.js';

/** Limits a memory store enforces on what it is given. */
export interface MemoryLimits {
  /** Largest content, in UTF-8 bytes. Default 64 KiB. */
  maxContentBytes: number;
  /** Largest namespace, in characters. Default 200. */
  maxNamespaceLength: number;
  /** Most tags on one memory. Default 32. */
  maxTags: number;
  /** Longest tag, in characters. Default 64. */
  maxTagLength: number;
  /** Largest `limit` of a recall. Default 1,000. */
  maxRecallLimit: number;
}

/** The limits used when none are given. */
export const DEFAULT_MEMORY_LIMITS: Readonly<MemoryLimits> = {
  maxContentBytes: 64 * 1024,
  maxNamespaceLength: 200,
  maxTags: 32,
  maxTagLength: 64,
  maxRecallLimit: 1000,
};

export function checkNamespace(namespace: string, limits: MemoryLimits): void {
  if (typeof namespace !== 'string' || namespace === '' || namespace.length > limits.maxNamespaceLength) {
    throw invalid(
      'namespace',
      `namespace must be 1 to ${limits.maxNamespaceLength} characters (such as "agent:daily-digest").`,
    );
  }
}

export function checkContent(content: string, limits: MemoryLimits): void {
  if (typeof content !== 'string' || content.trim() === '') {
    throw invalid('content', 'content must be non-empty text; write the note to remember.');
  }
  const bytes = Buffer.byteLength(content, 'utf8');
  if (bytes > limits.maxContentBytes) {
    throw invalid(
      'content',
      `content is ${bytes} bytes, over the ${limits.maxContentBytes}-byte limit; shorten it or split it into several memories.`,
    );
  }
}

/** Tags trimmed, emptied ones dropped, duplicates merged; too many or too long ones refused. */
export function cleanTags(tags: string[], limits: MemoryLimits): string[] {
  if (!Array.isArray(tags) || tags.some((t) => typeof t !== 'string')) {
    throw invalid('tags', 'tags must be a list of short words, such as ["deploy", "database"].');
  }
  const clean = [...new Set(tags.map((t) => t.trim()).filter((t) => t !== ''))];
  if (clean.length > limits.maxTags) {
    throw invalid('tags', `At most ${limits.maxTags} tags fit on one memory; keep the most telling ones.`);
  }
  const long = clean.find((t) => t.length > limits.maxTagLength);
  if (long !== undefined) {
    throw invalid(
      'tags',
      `Tag "${long.slice(0, 20)}…" is longer than ${limits.maxTagLength} characters; shorten it.`,
    );
  }
  return clean;
}

/** A recall's query and limit, checked. */
export function checkRecall(query: string, limit: number, limits: MemoryLimits): void {
  if (!Number.isInteger(limit) || limit < 1 || limit > limits.maxRecallLimit) {
    throw invalid('limit', `limit must be a whole number from 1 to ${limits.maxRecallLimit}, got ${limit}.`);
  }
  if (typeof query !== 'string') {
    throw invalid('query', 'query must be text; pass "" for the most recent memories.');
  }
}

/** The error of a save that the database refused. */
export function memoryWriteError(e: unknown): PaddockError {
  return new PaddockError(
    'INTERNAL',
    `Could not save the memory: ${e instanceof Error ? e.message : String(e)}. Check that the store's database is reachable, writable and has free space, then retry.`,
  );
}

function invalid(argument: string, message: string): PaddockError {
  return new PaddockError('INVALID_ARGUMENT', message, { argument });
}
