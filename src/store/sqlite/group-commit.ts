import type BetterSqlite3 from 'better-sqlite3';

/** Work done at the start of each transaction and just before its commit (the audit chain's head). */
export interface TransactionHooks {
  open(): void;
  close(): void;
}

interface Queued {
  write: () => unknown;
  resolve: (value: unknown) => void;
  reject: (error: unknown) => void;
}

/**
 * Group commit: writes queued during one turn of the event loop run in one transaction, and
 * each promise settles once that transaction has committed. A commit costs a dozen system
 * calls (WAL frames, locks) whatever it holds, so calls that arrive together share one;
 * a lone write waits only for the end of the current turn.
 *
 * A write must touch nothing but the database, since it may run twice: when one write of a
 * batch fails on its own account (a constraint, a value too big), the transaction rolls back
 * and every write runs again alone, so only that one fails. Keep any other side effect for
 * after its promise resolves. A failure of the database itself (a lock held past the busy
 * timeout, a full disk, an I/O error, a closed connection) fails the whole batch at once,
 * rather than waiting out the busy timeout once per write.
 *
 * Every transaction begins with `BEGIN IMMEDIATE` (a write may read before it writes: another
 * process must not commit in between), and `hooks` run at its start and before its commit.
 */
export class GroupCommit {
  private queue: Queued[] = [];
  private scheduled = false;
  private readonly batch: (writes: Queued[]) => unknown[];
  private readonly single: (write: Queued) => unknown;

  constructor(
    private readonly db: BetterSqlite3.Database,
    hooks?: TransactionHooks,
  ) {
    const batch = db.transaction((writes: Queued[]) => {
      hooks?.open();
      const results = writes.map((w) => w.write());
      hooks?.close();
      return results;
    });
    const single = db.transaction((w: Queued) => {
      hooks?.open();
      const result = w.write();
      hooks?.close();
      return result;
    });
    this.batch = (writes) => batch.immediate(writes);
    this.single = (write) => single.immediate(write);
  }

  /** Queues a write; resolves with its result once it is committed. */
  run<T>(write: () => T): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.queue.push({ write, resolve: resolve as (value: unknown) => void, reject });
      if (this.scheduled) return;
      this.scheduled = true;
      setImmediate(() => this.flush());
    });
  }

  private flush(): void {
    this.scheduled = false;
    const writes = this.queue;
    this.queue = [];
    if (writes.length > 1) {
      let results: unknown[];
      try {
        results = this.batch(writes);
      } catch (e) {
        if (!this.db.open || databaseFailure(e)) {
          for (const w of writes) w.reject(e);
          return;
        }
        this.alone(writes);
        return;
      }
      for (let i = 0; i < writes.length; i++) writes[i]!.resolve(results[i]);
      return;
    }
    this.alone(writes);
  }

  private alone(writes: Queued[]): void {
    for (const w of writes) {
      try {
        w.resolve(this.single(w));
      } catch (e) {
        w.reject(e);
      }
    }
  }
}

/** Result codes that say the database failed, not the write that met them. */
const DATABASE_FAILURE = /^SQLITE_(BUSY|LOCKED|IOERR|FULL|READONLY|CORRUPT|CANTOPEN|NOTADB|NOMEM|PROTOCOL)/;

function databaseFailure(e: unknown): boolean {
  const code = (e as { code?: unknown }).code;
  return typeof code === 'string' && DATABASE_FAILURE.test(code);
}
