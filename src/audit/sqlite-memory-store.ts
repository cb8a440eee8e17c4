import type BetterSqlite3 from 'better-sqlite3';
import { PaddockError } from '../shared/errors.js';
import { randomId } from '../shared/ids.js';
import { toFtsQuery } from './fts-query.js';
import { applyMigrations } from './migrations.js';
import type { Memory, MemoryStore } from './types.js';

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

export interface SqliteMemoryStoreOptions {
  limits?: Partial<MemoryLimits>;
  /** Clock for `createdAt` (epoch ms); `Date.now` by default. */
  now?: () => number;
}

interface Row {
  id: string;
  namespace: string;
  content: string;
  tags: string;
  created_at: number;
  rank?: number;
}

/** bm25 column weights: a word in a tag counts twice a word in the content. */
const RANK = 'bm25(memories_fts, 1.0, 2.0)';

/**
 * Long-term memory in SQLite: rows in `memories`, an FTS5 index kept in step by triggers.
 * Recall ranks by bm25 and is strictly namespaced (the namespace is an exact SQL equality
 * on the base table, never a full-text term). Memories persist in the database file.
 */
export class SqliteMemoryStore implements MemoryStore {
  private readonly limits: MemoryLimits;
  private readonly now: () => number;
  private readonly insert: BetterSqlite3.Statement;
  private readonly search: BetterSqlite3.Statement;
  private readonly recent: BetterSqlite3.Statement;

  constructor(db: BetterSqlite3.Database, options: SqliteMemoryStoreOptions = {}) {
    applyMigrations(db);
    this.limits = { ...DEFAULT_MEMORY_LIMITS, ...options.limits };
    this.now = options.now ?? Date.now;
    this.insert = db.prepare(
      'INSERT INTO memories (id, namespace, content, tags, created_at) VALUES (?, ?, ?, ?, ?)',
    );
    this.search = db.prepare(
      `SELECT m.id, m.namespace, m.content, m.tags, m.created_at, ${RANK} AS rank
       FROM memories_fts JOIN memories m ON m.seq = memories_fts.rowid
       WHERE memories_fts MATCH ? AND m.namespace = ?
       ORDER BY rank, m.created_at DESC, m.seq DESC LIMIT ?`,
    );
    this.recent = db.prepare(
      `SELECT id, namespace, content, tags, created_at FROM memories
       WHERE namespace = ? ORDER BY created_at DESC, seq DESC LIMIT ?`,
    );
  }

  /** Stores a note under `namespace`. Tags are trimmed, emptied ones dropped, duplicates merged. */
  save(namespace: string, content: string, tags: string[] = []): Memory {
    this.checkNamespace(namespace);
    if (typeof content !== 'string' || content.trim() === '') {
      throw invalid('content', 'content must be non-empty text; write the note to remember.');
    }
    const bytes = Buffer.byteLength(content, 'utf8');
    if (bytes > this.limits.maxContentBytes) {
      throw invalid(
        'content',
        `content is ${bytes} bytes, over the ${this.limits.maxContentBytes}-byte limit; shorten it or split it into several memories.`,
      );
    }
    const cleanTags = this.cleanTags(tags);
    const memory: Memory = {
      id: randomId('mem'),
      namespace,
      content,
      tags: cleanTags,
      createdAt: this.now(),
    };
    try {
      this.insert.run(memory.id, namespace, content, JSON.stringify(cleanTags), memory.createdAt);
    } catch (e) {
      throw new PaddockError(
        'INTERNAL',
        `Could not save the memory: ${e instanceof Error ? e.message : String(e)}. Check that the data directory is writable and has free space, then retry.`,
      );
    }
    return memory;
  }

  /**
   * Up to `limit` memories of `namespace` that best match `query` (bm25; `score` is higher for
   * better matches). Any text is accepted as a query: FTS5 syntax in it is searched as plain
   * words. A query with no words returns the most recent memories, newest first, without score.
   */
  recall(namespace: string, query: string, limit: number): Memory[] {
    this.checkNamespace(namespace);
    if (!Number.isInteger(limit) || limit < 1 || limit > this.limits.maxRecallLimit) {
      throw invalid(
        'limit',
        `limit must be a whole number from 1 to ${this.limits.maxRecallLimit}, got ${limit}.`,
      );
    }
    if (typeof query !== 'string')
      throw invalid('query', 'query must be text; pass "" for the most recent memories.');
    const match = toFtsQuery(query);
    if (match === undefined) return (this.recent.all(namespace, limit) as Row[]).map(fromRow);
    return (this.search.all(match, namespace, limit) as Row[]).map(fromRow);
  }

  private checkNamespace(namespace: string): void {
    if (
      typeof namespace !== 'string' ||
      namespace === '' ||
      namespace.length > this.limits.maxNamespaceLength
    ) {
      throw invalid(
        'namespace',
        `namespace must be 1 to ${this.limits.maxNamespaceLength} characters (such as "agent:daily-digest").`,
      );
    }
  }

  private cleanTags(tags: string[]): string[] {
    if (!Array.isArray(tags) || tags.some((t) => typeof t !== 'string')) {
      throw invalid('tags', 'tags must be a list of short words, such as ["deploy", "database"].');
    }
    const clean = [...new Set(tags.map((t) => t.trim()).filter((t) => t !== ''))];
    if (clean.length > this.limits.maxTags) {
      throw invalid(
        'tags',
        `At most ${this.limits.maxTags} tags fit on one memory; keep the most telling ones.`,
      );
    }
    const long = clean.find((t) => t.length > this.limits.maxTagLength);
    if (long !== undefined) {
      throw invalid(
        'tags',
        `Tag "${long.slice(0, 20)}…" is longer than ${this.limits.maxTagLength} characters; shorten it.`,
      );
    }
    return clean;
  }
}

function fromRow(r: Row): Memory {
  const memory: Memory = {
    id: r.id,
    namespace: r.namespace,
    content: r.content,
    tags: JSON.parse(r.tags) as string[],
    createdAt: r.created_at,
  };
  if (r.rank !== undefined) memory.score = -r.rank;
  return memory;
}

function invalid(argument: string, message: string): PaddockError {
  return new PaddockError('INVALID_ARGUMENT', message, { argument });
}
