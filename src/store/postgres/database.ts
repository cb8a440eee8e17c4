/** The pool every PostgreSQL store shares, with one way to run a statement and word its failure. */
import { readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import type pg from 'pg';
import type { PaddockError } from '../../shared/errors.js';
import { type PgEndpoint, storeError } from './connection.js';

/**
 * This machine, as the owner of running rows: the host name and the kernel's boot id, so two
 * machines with one name, or one machine after a reboot, are never taken for each other. A
 * server only judges by pid the rows of its own host; other hosts' rows wait for their leases.
 */
export function hostIdentity(): string {
  let boot = '';
  try {
    boot = readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim().slice(0, 8);
  } catch {
    // no /proc: the host name alone
  }
  return boot ? `${hostname()}/${boot}` : hostname();
}

/** A statement: SQL text, or a named prepared statement (`name` reused per connection). */
export type Statement = string | { name: string; text: string };

/** The shared pool of one server's stores. */
export class PgDatabase {
  constructor(
    readonly pool: pg.Pool,
    readonly endpoint: PgEndpoint,
    /** See {@link hostIdentity}. */
    readonly host: string,
  ) {}

  /**
   * Runs one statement in its own transaction (autocommit): when the promise resolves, the
   * change is committed. A failure rejects with a PaddockError naming `store` (a lost
   * connection: "the <store> store is unavailable").
   */
  async run<R extends pg.QueryResultRow = pg.QueryResultRow>(
    store: string,
    statement: Statement,
    params: unknown[] = [],
  ): Promise<pg.QueryResult<R>> {
    try {
      const config = typeof statement === 'string' ? { text: statement } : statement;
      return await this.pool.query<R>({ ...config, values: params });
    } catch (e) {
      throw storeError(e, store, this.endpoint);
    }
  }

  /** A driver failure worded for `store` (see `storeError`). */
  error(store: string, e: unknown): PaddockError {
    return storeError(e, store, this.endpoint);
  }

  /** The rows of one statement. */
  async rows<R extends pg.QueryResultRow = pg.QueryResultRow>(
    store: string,
    statement: Statement,
    params: unknown[] = [],
  ): Promise<R[]> {
    return (await this.run<R>(store, statement, params)).rows;
  }

  /** Runs `work` in one transaction on one connection; rolled back when it throws. */
  async transaction<T>(store: string, work: (client: pg.PoolClient) => Promise<T>): Promise<T> {
    let client: pg.PoolClient;
    try {
      client = await this.pool.connect();
    } catch (e) {
      throw storeError(e, store, this.endpoint);
    }
    let broken = false;
    try {
      await client.query('BEGIN');
      const result = await work(client);
      await client.query('COMMIT');
      return result;
    } catch (e) {
      await client.query('ROLLBACK').catch(() => {
        broken = true;
      });
      throw storeError(e, store, this.endpoint);
    } finally {
      client.release(broken);
    }
  }
}
