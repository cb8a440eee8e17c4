/**
 * Opens the PostgreSQL stores: one connection to check that the database can be used and to
 * migrate it (under the advisory lock), then the pool every store shares.
 */
import pg from 'pg';
import { PaddockError } from '../../shared/errors.js';
import type { Logger } from '../../shared/logger.js';
import type { Stores } from '../stores.js';
import { PgApprovalStore } from './approval-store.js';
import { PgAuditStore } from './audit-store.js';
import { connectError, describeEndpoint, type PgPoolOptions, poolConfig } from './connection.js';
import { hostIdentity, PgDatabase } from './database.js';
import { PgLaunchLinkStore } from './launch-link-store.js';
import { PgMemoryStore } from './memory-store.js';
import { migrate, PG_MIGRATIONS, type PgMigration } from './migrations.js';
import { PgOAuthStore } from './oauth-store.js';
import { PgAgentRunStore } from './run-store.js';
import { PgToolPinStore } from './tool-pin-store.js';

/** Options of {@link openPostgresStores}. */
export interface PostgresStoresOptions extends PgPoolOptions {
  serverId: string;
  logger: Logger;
  /** How often audit listeners get rows other servers wrote. Default 500 ms. */
  feedIntervalMs?: number;
  /** The schema to apply; the full list by default (tests pass a longer or a bad list). */
  migrations?: readonly PgMigration[];
}

/**
 * Connects to `url` with `password`, migrates, and returns the stores. Rejects with a
 * PaddockError naming the fault (unreachable, wrong or missing password, no such database or
 * role, a schema from a newer Paddock), each with `details.startup`, so the CLI exits 2.
 */
export async function openPostgresStores(
  url: string,
  password: string | undefined,
  options: PostgresStoresOptions,
): Promise<Stores> {
  const { config, endpoint } = poolConfig(url, password, options);
  const logger = options.logger.child({ store: 'postgres' });
  // the query timeout is for a server's calls; a migration may take longer
  const first = new pg.Client({ ...config, query_timeout: undefined });
  first.on('error', () => undefined);
  try {
    await first.connect();
  } catch (e) {
    await first.end().catch(() => undefined);
    throw connectError(e, endpoint);
  }
  try {
    const steps = await migrate(first, options.migrations ?? PG_MIGRATIONS);
    if (steps > 0) logger.info('store.migrated', { steps, database: describeEndpoint(endpoint) });
  } catch (e) {
    throw e instanceof PaddockError ? e : connectError(e, endpoint);
  } finally {
    await first.end().catch(() => undefined);
  }

  const pool = new pg.Pool(config);
  // an idle connection that the server drops must not crash the process: the next query
  // opens a new one, or fails with "the store is unavailable"
  pool.on('error', (e) => logger.warn('store.connection_lost', { error: e.message }));
  const db = new PgDatabase(pool, endpoint, hostIdentity());
  const audit = new PgAuditStore(db, {
    logger,
    ...(options.feedIntervalMs !== undefined ? { feedIntervalMs: options.feedIntervalMs } : {}),
  });
  let closed = false;
  return {
    kind: 'postgres',
    shared: true,
    serverId: options.serverId,
    audit,
    memory: new PgMemoryStore(db),
    runs: new PgAgentRunStore(db),
    launchLinks: new PgLaunchLinkStore(db),
    approvals: new PgApprovalStore(db),
    oauth: new PgOAuthStore(db),
    toolPins: new PgToolPinStore(db),
    async close() {
      if (closed) return;
      closed = true;
      audit.close();
      await pool.end();
    },
  };
}
