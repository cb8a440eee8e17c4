/** The audit log and memory store: types, SQLite implementations and CLI helpers. */
export {
  isSecretKey,
  MAX_INPUT_BYTES,
  REDACTED,
  redactedJson,
  redactSecrets,
  serializeInput,
} from '../shared/redact.js';
export { DEFAULT_QUERY_LIMIT, MAX_QUERY_LIMIT } from '../store/audit-rows.js';
export { DEFAULT_MEMORY_LIMITS, type MemoryLimits } from '../store/memory-rules.js';
export { SqliteAuditStore, type SqliteAuditStoreOptions } from '../store/sqlite/audit-store.js';
export {
  type Database,
  DEFAULT_BUSY_TIMEOUT_MS,
  type OpenDatabaseOptions,
  openDatabase,
  type Synchronous,
} from '../store/sqlite/database.js';
export { MAX_QUERY_TERMS, toFtsQuery } from '../store/sqlite/fts-query.js';
export { SqliteMemoryStore, type SqliteMemoryStoreOptions } from '../store/sqlite/memory-store.js';
export {
  appliedMigrations,
  applyMigrations,
  MIGRATIONS,
  type Migration,
} from '../store/sqlite/migrations.js';
export { parseSince } from './since.js';
export type * from './types.js';
