/**
 * The stores of one Paddock: async interfaces (audit, memories, agent runs and schedule
 * claims, launch links, approvals, OAuth) and the factory that opens them from config.
 * SQLite in the data directory is the embedded default; PostgreSQL lets several servers
 * share one set of stores.
 */
import type { StoreConfig } from '../config/store-schema.js';
import { randomId } from '../shared/ids.js';
import { silentLogger } from '../shared/logger.js';
import type { OpenStoresOptions, Stores } from './stores.js';
import { resolveStoreTarget } from './target.js';

/**
 * Opens the stores `config` names (see `resolveStoreTarget`), with every migration applied.
 * Rejects with a PaddockError that says what to do when the database cannot be used.
 */
export async function openStores(
  config: StoreConfig | undefined,
  options: OpenStoresOptions,
): Promise<Stores> {
  const target = resolveStoreTarget(config, options.dataDir, options.env);
  const serverId = options.serverId ?? randomId('srv', 10);
  const logger = options.logger ?? silentLogger();
  switch (target.kind) {
    case 'sqlite':
      // Each driver loads only when its store is chosen (a CLI command pays for one).
      return (await import('./sqlite/open.js')).openSqliteStores(target.file, { serverId, logger });
    case 'postgres':
      return (await import('./postgres/open.js')).openPostgresStores(target.url, target.password, {
        serverId,
        logger,
      });
  }
}
