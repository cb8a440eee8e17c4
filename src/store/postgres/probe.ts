/** A look at a PostgreSQL store without changing it, for `paddock doctor`. */
import pg from 'pg';
import { PaddockError } from '../../shared/errors.js';
import { connectError, describeEndpoint, poolConfig } from './connection.js';
import { appliedPgMigrations, PG_MIGRATIONS } from './migrations.js';

/**
 * Connects once and reads the schema ledger: resolves with a line saying where the store is and
 * how its schema stands, or rejects with the same PaddockError a server start would give
 * (unreachable, refused password, missing database, a schema newer than this build).
 */
export async function probePostgres(url: string, password: string | undefined): Promise<string> {
  const { config, endpoint } = poolConfig(url, password, { connectTimeoutMs: 5_000 });
  const client = new pg.Client(config);
  client.on('error', () => undefined);
  try {
    await client.connect();
  } catch (e) {
    await client.end().catch(() => undefined);
    throw connectError(e, endpoint);
  }
  try {
    const applied = await appliedPgMigrations(client);
    const version = applied.at(-1)?.version ?? 0;
    const known = PG_MIGRATIONS.length;
    if (version > known) {
      throw new PaddockError(
        'INTERNAL',
        `The database was migrated by a newer Paddock (schema version ${version}; this build knows ${known}). Upgrade this server.`,
        { startup: true },
      );
    }
    const schema =
      version === known
        ? `schema version ${version}, up to date`
        : version === 0
          ? 'no tables yet (the first server to start creates them)'
          : `schema version ${version}; the next server start migrates it to ${known}`;
    return `${describeEndpoint(endpoint)}: ${schema}`;
  } catch (e) {
    throw e instanceof PaddockError ? e : connectError(e, endpoint);
  } finally {
    await client.end().catch(() => undefined);
  }
}
