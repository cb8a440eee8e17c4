/** The audit log and memory store: types, SQLite implementations and CLI helpers. */
export {
  type Database,
  DEFAULT_BUSY_TIMEOUT_MS,
  type OpenDatabaseOptions,
  openDatabase,
  type Synchronous,
} from './database.js';
export { type FormatAuditRowOptions, formatAuditRow, formatDuration } from './format.js';
export { MAX_QUERY_TERMS, toFtsQuery } from './fts-query.js';
export { appliedMigrations, applyMigrations, MIGRATIONS, type Migration } from './migrations.js';
export {
  isSecretKey,
  MAX_INPUT_BYTES,
  REDACTED,
  redactedJson,
  redactSecrets,
  serializeInput,
} from './redact.js';
export { parseSince } from './since.js';
export {
  DEFAULT_QUERY_LIMIT,
  MAX_QUERY_LIMIT,
  SqliteAuditStore,
  type SqliteAuditStoreOptions,
} from './sqlite-audit-store.js';
export {
  DEFAULT_MEMORY_LIMITS,
  type MemoryLimits,
  SqliteMemoryStore,
  type SqliteMemoryStoreOptions,
} from './sqlite-memory-store.js';
export type * from './types.js';
