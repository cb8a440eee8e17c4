/**
 * An exclusive lock on a file that the kernel releases when its holder dies, however it dies.
 *
 * Node has no flock(2); SQLite's file locking (POSIX record locks, released by the kernel on
 * process exit) gives the same guarantee through better-sqlite3, which Paddock already loads: the
 * holder keeps an EXCLUSIVE transaction open on a small lock database for as long as it lives. A
 * lock can therefore never go stale — a crashed server's lock is free the moment it is gone —
 * and there is no pid file to misjudge after a pid is reused.
 */
import Database from 'better-sqlite3';

/** A held lock; `release` frees it (also freed when the process exits). */
export interface HeldLock {
  release(): void;
}

/**
 * Takes the lock on `file`, waiting up to `waitMs` for a holder to release it; null when it is
 * still held then. The file is created (mode 0600 by the caller's directory) when missing.
 */
export function acquireLock(file: string, waitMs = 0): HeldLock | null {
  const db = new Database(file, { timeout: waitMs });
  try {
    db.pragma('journal_mode = DELETE');
    db.exec('BEGIN EXCLUSIVE');
  } catch (e) {
    db.close();
    if ((e as { code?: string }).code?.startsWith('SQLITE_BUSY')) return null;
    throw e;
  }
  let held = true;
  return {
    release() {
      if (!held) return;
      held = false;
      try {
        db.exec('ROLLBACK');
      } finally {
        db.close();
      }
    },
  };
}
