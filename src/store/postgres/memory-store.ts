/**
 * Long-term memory on PostgreSQL: rows in `memories` with a tsvector (content weight B, tags
 * weight A) behind a GIN index. Recall ranks with `ts_rank_cd` (a word in a tag counts twice a
 * word in the content, longer notes are damped like bm25 does) and is strictly namespaced.
 */
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
import { isConnectionFailure } from './connection.js';
import type { PgDatabase } from './database.js';
import { memoryVector, toTsQuery } from './search.js';

const STORE = 'memory';

/** Weights of ts_rank_cd for D, C, B (content) and A (tags). */
const WEIGHTS = '{0.1, 0.2, 0.5, 1.0}';
/** Normalisation 1: the rank divided by 1 + log(words in the note). */
const NORMALIZATION = 1;

export interface PgMemoryStoreOptions {
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

const SEARCH = {
  name: 'paddock_memory_search',
  text: `SELECT id, namespace, content, tags, created_at, rank FROM (
      SELECT id, namespace, content, tags, created_at, seq,
        ts_rank_cd('${WEIGHTS}', search, $1::tsquery, ${NORMALIZATION}) AS rank
      FROM memories WHERE namespace = $2 AND search @@ $1::tsquery
    ) AS found ORDER BY rank DESC, created_at DESC, seq DESC LIMIT $3`,
};

const RECENT = {
  name: 'paddock_memory_recent',
  text: `SELECT id, namespace, content, tags, created_at FROM memories
    WHERE namespace = $1 ORDER BY created_at DESC, seq DESC LIMIT $2`,
};

const INSERT = {
  name: 'paddock_memory_insert',
  text: `INSERT INTO memories (id, namespace, content, tags, created_at, search)
    VALUES ($1, $2, $3, $4, $5, $6::tsvector)`,
};

/** `memories` on PostgreSQL, shared by every server of the fleet. */
export class PgMemoryStore implements MemoryStore {
  private readonly limits: MemoryLimits;
  private readonly now: () => number;

  constructor(
    private readonly db: PgDatabase,
    options: PgMemoryStoreOptions = {},
  ) {
    this.limits = { ...DEFAULT_MEMORY_LIMITS, ...options.limits };
    this.now = options.now ?? Date.now;
  }

  async save(namespace: string, content: string, tags: string[] = []): Promise<Memory> {
    checkNamespace(namespace, this.limits);
    checkContent(content, this.limits);
    const clean = cleanTags(tags, this.limits);
    const memory: Memory = { id: randomId('mem'), namespace, content, tags: clean, createdAt: this.now() };
    try {
      await this.db.pool.query({
        ...INSERT,
        values: [
          memory.id,
          namespace,
          content,
          JSON.stringify(clean),
          memory.createdAt,
          memoryVector(content, clean),
        ],
      });
    } catch (e) {
      throw isConnectionFailure(e) ? this.db.error(STORE, e) : memoryWriteError(e);
    }
    return memory;
  }

  async recall(namespace: string, query: string, limit: number): Promise<Memory[]> {
    checkNamespace(namespace, this.limits);
    checkRecall(query, limit, this.limits);
    const match = toTsQuery(query);
    const rows =
      match === undefined
        ? await this.db.rows<Row>(STORE, RECENT, [namespace, limit])
        : await this.db.rows<Row>(STORE, SEARCH, [match, namespace, limit]);
    return rows.map(fromRow);
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
  if (r.rank !== undefined) memory.score = r.rank;
  return memory;
}
