import type { Logger } from '../../shared/logger.js';
import type { Stores } from '../stores.js';
import { SqliteApprovalStore } from './approval-store.js';
import { SqliteAuditStore } from './audit-store.js';
import { type Database, type OpenDatabaseOptions, openDatabase } from './database.js';
import { SqliteLaunchLinkStore } from './launch-link-store.js';
import { SqliteMemoryStore } from './memory-store.js';
import { SqliteOAuthStore } from './oauth-store.js';
import { SqliteAgentRunStore } from './run-store.js';
import { SqliteToolPinStore } from './tool-pin-store.js';

/** Options of {@link openSqliteStores}. */
export interface SqliteStoresOptions extends OpenDatabaseOptions {
  serverId: string;
  logger: Logger;
  /** How often audit subscribers get rows other processes wrote (default 500 ms). */
  feedIntervalMs?: number;
}

/** The SQLite stores, with the connection they share (tests and `paddock doctor` read it). */
export interface SqliteStores extends Stores {
  readonly kind: 'sqlite';
  readonly db: Database;
}

/**
 * Opens the embedded stores in `file` (created with every migration applied; see
 * `openDatabase`): one connection that every store shares. SQLite is one host's file, so the
 * stores are not `shared`; another process on the same file (a one-shot CLI command) still
 * sees every row, and its audit rows reach subscribers by polling.
 */
export async function openSqliteStores(file: string, options: SqliteStoresOptions): Promise<SqliteStores> {
  const db = openDatabase(file, options);
  return sqliteStores(db, options);
}

/** The stores over an open connection (the caller keeps owning it unless it calls `close`). */
export function sqliteStores(
  db: Database,
  options: Pick<SqliteStoresOptions, 'serverId' | 'logger' | 'feedIntervalMs'>,
): SqliteStores {
  const audit = new SqliteAuditStore(db, {
    logger: options.logger,
    ...(options.feedIntervalMs !== undefined ? { feedIntervalMs: options.feedIntervalMs } : {}),
  });
  return {
    kind: 'sqlite',
    shared: false,
    serverId: options.serverId,
    db,
    audit,
    memory: new SqliteMemoryStore(db),
    runs: new SqliteAgentRunStore(db),
    launchLinks: new SqliteLaunchLinkStore(db),
    approvals: new SqliteApprovalStore(db),
    oauth: new SqliteOAuthStore(db),
    toolPins: new SqliteToolPinStore(db),
    close: async () => {
      audit.close();
      if (db.open) db.close();
    },
  };
}
