import { closeSync, mkdirSync, openSync } from 'node:fs';
import { dirname } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import { PaddockError } from '../../shared/errors.js';
import { applyMigrations, MIGRATIONS, type Migration } from './migrations.js';

/** A better-sqlite3 connection. */
export type Database = BetterSqlite3.Database;

/**
 * How hard a commit is pushed to disk.
 * - `NORMAL`: a committed row survives a crash or SIGKILL of the process; a crash of the
 *   operating system or a power loss can lose the last transactions (the database stays intact).
 * - `FULL`: the WAL is fsynced on every commit, so committed rows also survive an OS crash.
 *   Measured on the 2-core reference machine, `SqliteAuditStore.record` with a small input:
 *   median about 27 µs with NORMAL and 190 µs with FULL, so NORMAL is the default.
 */
export type Synchronous = 'NORMAL' | 'FULL';

export interface OpenDatabaseOptions {
  /** Default `NORMAL` (see {@link Synchronous}). */
  synchronous?: Synchronous;
  /** How long a statement waits for another connection's write lock. Default 5,000 ms. */
  busyTimeoutMs?: number;
  /** The schema to apply; the full list by default (tests pass a prefix or a bad list). */
  migrations?: readonly Migration[];
}

/** Default wait for a locked database before a write fails. */
export const DEFAULT_BUSY_TIMEOUT_MS = 5_000;

/**
 * Opens (creating if needed) Paddock's SQLite database: WAL journal, the chosen
 * `synchronous` level, a busy timeout, foreign keys, and every pending migration applied.
 * A missing parent directory is created with mode 0700 and a new database file with mode
 * 0600 (the WAL and shared-memory files inherit it). `:memory:` opens a private in-memory
 * database (no WAL). The caller owns the connection and closes it.
 */
export function openDatabase(file: string, options: OpenDatabaseOptions = {}): Database {
  const inMemory = file === ':memory:';
  let db: Database;
  try {
    if (!inMemory) {
      mkdirSync(dirname(file), { recursive: true, mode: 0o700 });
      closeSync(openSync(file, 'a', 0o600));
    }
    db = new BetterSqlite3(file);
  } catch (e) {
    throw openError(file, e);
  }
  try {
    retryWhileBusy(options.busyTimeoutMs ?? DEFAULT_BUSY_TIMEOUT_MS, () => {
      configure(db, inMemory, options);
      applyMigrations(db, options.migrations ?? MIGRATIONS);
    });
    return db;
  } catch (e) {
    db.close();
    if (e instanceof PaddockError) throw e;
    throw openError(file, e);
  }
}

/**
 * Runs `step` again while SQLite answers SQLITE_BUSY, until `timeoutMs` has passed. The busy
 * timeout covers ordinary statements, but not every lock taken while a new file is switched
 * to WAL by another process at the same moment: that one fails at once with "database is
 * locked". Opening is synchronous, so the wait between tries blocks (a few milliseconds).
 */
function retryWhileBusy(timeoutMs: number, step: () => void): void {
  const deadline = Date.now() + Math.max(timeoutMs, 0);
  const pause = new Int32Array(new SharedArrayBuffer(4));
  for (let attempt = 1; ; attempt++) {
    try {
      step();
      return;
    } catch (e) {
      const code = (e as { code?: unknown }).code;
      const busy = typeof code === 'string' && code.startsWith('SQLITE_BUSY');
      if (!busy || Date.now() >= deadline) throw e;
      Atomics.wait(pause, 0, 0, Math.min(5 * attempt, 50));
    }
  }
}

function configure(db: Database, inMemory: boolean, options: OpenDatabaseOptions): void {
  const busyTimeoutMs = options.busyTimeoutMs ?? DEFAULT_BUSY_TIMEOUT_MS;
  if (!Number.isInteger(busyTimeoutMs) || busyTimeoutMs < 0) {
    throw new PaddockError(
      'INVALID_ARGUMENT',
      `busyTimeoutMs must be a non-negative integer, got ${busyTimeoutMs}.`,
    );
  }
  const synchronous = options.synchronous ?? 'NORMAL';
  if (synchronous !== 'NORMAL' && synchronous !== 'FULL') {
    throw new PaddockError(
      'INVALID_ARGUMENT',
      `synchronous must be "NORMAL" or "FULL", got "${synchronous}".`,
    );
  }
  db.pragma(`busy_timeout = ${busyTimeoutMs}`);
  if (!inMemory) {
    const mode = db.pragma('journal_mode = WAL', { simple: true });
    if (String(mode).toLowerCase() !== 'wal') {
      throw new PaddockError(
        'INTERNAL',
        `SQLite could not switch the database to WAL mode (it reports "${String(mode)}"). Put the data directory on a local filesystem (set PADDOCK_DATA) and retry.`,
      );
    }
  }
  db.pragma(`synchronous = ${synchronous}`);
  db.pragma('foreign_keys = ON');
}

function openError(file: string, e: unknown): PaddockError {
  const reason = e instanceof Error ? e.message : String(e);
  return new PaddockError(
    'INTERNAL',
    `Cannot open the database at ${file}: ${reason}. Check that the data directory (PADDOCK_DATA) exists, is writable by this user and holds a Paddock database, then retry.`,
    { file },
  );
}
