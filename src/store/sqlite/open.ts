import { PaddockError } from '../../shared/errors.js';
import type { Logger } from '../../shared/logger.js';
import type { Stores } from '../stores.js';

/** Options of {@link openSqliteStores}. */
export interface SqliteStoresOptions {
  serverId: string;
  logger: Logger;
}

/**
 * Opens the embedded SQLite stores in `file`. The SQLite implementations move here from
 * their domains next; until then this seam refuses.
 */
export async function openSqliteStores(file: string, _options: SqliteStoresOptions): Promise<Stores> {
  throw new PaddockError('INTERNAL', `The SQLite stores for ${file} are not wired through openStores yet.`);
}
