/**
 * One writer per computer's checkpoints: in this process by a promise chain per computer, across
 * processes by a lock file holding the owner's pid. A lock whose pid is gone (a process killed
 * during a checkpoint) is taken over; the caller then collects what that process left.
 */
import { link, readFile, unlink, writeFile } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import { PaddockError } from '../../shared/errors.js';

/** How long a caller waits for another process's lock before giving up. */
const WAIT_MS = 10_000;

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Serialises work per key in this process and, through `lockPath`, across processes. */
export class KeyedLock {
  private readonly tails = new Map<string, Promise<void>>();

  /** Runs `work` holding the lock of `key` (lock file `lockPath`); `stale` says whether a dead holder was displaced. */
  async run<T>(key: string, lockPath: string, work: (stale: boolean) => Promise<T>): Promise<T> {
    const prior = this.tails.get(key) ?? Promise.resolve();
    let done!: () => void;
    const mine = new Promise<void>((r) => {
      done = r;
    });
    const tail = prior.then(() => mine);
    this.tails.set(key, tail);
    await prior;
    try {
      const stale = await acquireFile(lockPath);
      try {
        return await work(stale);
      } finally {
        await unlink(lockPath).catch(() => {});
      }
    } finally {
      done();
      if (this.tails.get(key) === tail) this.tails.delete(key);
    }
  }
}

async function acquireFile(lockPath: string): Promise<boolean> {
  const deadline = Date.now() + WAIT_MS;
  let stale = false;
  for (;;) {
    // the pid is written first and linked into place, so a lock file always names its holder
    const tmp = `${lockPath}.${process.pid}`;
    await writeFile(tmp, String(process.pid), { mode: 0o600 });
    try {
      await link(tmp, lockPath);
      return stale;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
    } finally {
      await unlink(tmp);
    }
    const pid = Number.parseInt(await readFile(lockPath, 'utf8').catch(() => ''), 10);
    if (!Number.isInteger(pid) || pid <= 0 || !alive(pid)) {
      // a holder that died
      await unlink(lockPath).catch(() => {});
      stale = true;
      continue;
    }
    if (Date.now() > deadline) {
      throw new PaddockError(
        'TIMEOUT',
        `Process ${pid} has been working on these checkpoints for over ${WAIT_MS / 1000} s: wait for it to finish, then try again.`,
        { pid },
      );
    }
    await sleep(20);
  }
}
