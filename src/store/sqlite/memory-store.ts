import type BetterSqlite3 from 'better-sqlite3';
import { randomId } from '../../shared/ids.js';
import type { Memory, MemoryStore } from '../memory.js';
import {
  checkContent,
  checkNamespace,
  checkRecall,
  cleanTags,
  DEFAULT_MEMORY_LIMITS,
  type MemoryLimits,
  memoryWriteError,
} from '../memory-rules.js';
import { toFtsQuery } from './fts-query.js';
import { applyMigrations } from './migrations.js';

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

  async save(namespace: string, content: string, tags: string[] = []): Promise<Memory> {
    checkNamespace(namespace, this.limits);
    checkContent(content, this.limits);
    const clean = cleanTags(tags, this.limits);
    const memory: Memory = { id: randomId('mem'), namespace, content, tags: clean, createdAt: this.now() };
    try {
      this.insert.run(memory.id, namespace, content, JSON.stringify(clean), memory.createdAt);
    } catch (e) {
      throw memoryWriteError(e);
    }
    return memory;
  }

  /** bm25 ranking; FTS5 syntax in the query is searched as plain words. */
  async recall(namespace: string, query: string, limit: number): Promise<Memory[]> {
    checkNamespace(namespace, this.limits);
    checkRecall(query, limit, this.limits);
    const match = toFtsQuery(query);
    if (match === undefined) return (this.recent.all(namespace, limit) as Row[]).map(fromRow);
    return (this.search.all(match, namespace, limit) as Row[]).map(fromRow);
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
