/**
 * Taking a snapshot of a directory tree into the object store. The walk goes depth first in name
 * order through open directory descriptors (at.ts); file contents are copied by a pool of readers
 * while the walk goes on, each copy checked against the file's state before and after (size,
 * mtime, ctime and inode) so a file changing under it is copied again, never kept torn. A file
 * whose inode, size, mtime and ctime equal those in the previous checkpoint is not read at all.
 */
import type { BigIntStats } from 'node:fs';
import type { FileHandle } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import { PaddockError } from '../../shared/errors.js';
import { lstatAt, namesOf, openDirAt, openFileAt, readlinkAt } from './at.js';
import type { ObjectStore } from './objects.js';
import type { DirEntry, FileEntry, TreeEntry } from './types.js';

/**
 * A change is seen in ctime only if it falls in a later clock tick than the ctime read before the
 * copy; a file changed less than this long before its copy began is read twice and kept when both
 * reads agree.
 */
const SETTLE_MS = 20;
/** Pause before copying a file again that changed during its copy (times the attempt). */
const RETRY_MS = 5;
/** Copies of one file before the snapshot gives up on it. */
const MAX_ATTEMPTS = 8;

/** What a snapshot needs besides the tree. */
export interface SnapshotOptions {
  objects: ObjectStore;
  /** The previous checkpoint's root tree: its files are reused when unchanged. */
  previous: string | null;
  /** Readers working at once. */
  concurrency: number;
  /** Stops the snapshot (LIMIT_EXCEEDED) once its own distinct bytes pass this. */
  maxBytes: number;
  /** Names the setting `maxBytes` comes from, for the error. */
  maxBytesSetting: string;
  signal?: AbortSignal;
}

/** The snapshot's root and what it cost. */
export interface SnapshotResult {
  root: DirEntry;
  addedBytes: number;
  files: number;
  bytes: number;
  skipped: number;
}

/** A result still being made, wrapped so that awaiting the wrapper does not wait for it. */
type Later<T> = { p: Promise<T> };
const later = <T>(value: T): Later<T> => ({ p: Promise.resolve(value) });

const meta = (name: string, st: BigIntStats) => ({
  name,
  mode: Number(st.mode & 0o7777n),
  uid: Number(st.uid),
  gid: Number(st.gid),
  mtimeNs: st.mtimeNs.toString(),
});

/** Takes a snapshot of the tree whose root directory is open as `root`. */
export async function snapshotTree(root: FileHandle, opts: SnapshotOptions): Promise<SnapshotResult> {
  const { objects } = opts;
  const counts = { addedBytes: 0, files: 0, bytes: 0, skipped: 0, ownBytes: 0 };
  const seenObjects = new Set<string>();
  const firstOfInode = new Map<bigint, { path: string; copied: Promise<TreeEntry | null> }>();
  const rootDev = (await root.stat({ bigint: true })).dev;

  // a bounded pool of readers; the walk waits when too much work is queued
  let active = 0;
  const waiting: (() => void)[] = [];
  const roomWaiters: (() => void)[] = [];
  const queueLimit = opts.concurrency * 4;
  /** Holds the walk while many copies are queued, so few directories stay open at once. */
  const room = async (): Promise<void> => {
    while (waiting.length >= queueLimit) await new Promise<void>((r) => roomWaiters.push(r));
  };
  const acquire = async (): Promise<void> => {
    if (active < opts.concurrency) {
      active++;
      return;
    }
    await new Promise<void>((r) => waiting.push(r));
  };
  const release = (): void => {
    const next = waiting.shift();
    if (next) next();
    else active--;
    if (waiting.length < queueLimit) for (const r of roomWaiters.splice(0)) r();
  };
  const pooled = async <T>(work: () => Promise<T>): Promise<T> => {
    await acquire();
    try {
      return await work();
    } finally {
      release();
    }
  };

  // the first failure of any copy stops the walk too
  let failure: unknown = null;
  /** Counts object `hash` as part of this checkpoint (once), against `maxBytes`. */
  const account = (hash: string, size: number): void => {
    if (seenObjects.has(hash)) return;
    seenObjects.add(hash);
    counts.ownBytes += size;
    if (counts.ownBytes > opts.maxBytes) {
      failure = new PaddockError(
        'LIMIT_EXCEEDED',
        `This checkpoint would hold more than ${opts.maxBytes} bytes, the limit set by ${opts.maxBytesSetting}: raise that setting or remove large files from the computer, then take the checkpoint again.`,
        { setting: opts.maxBytesSetting, limit: opts.maxBytes },
      );
      throw failure;
    }
  };

  /**
   * Copies one regular file, again while it keeps changing; null when it vanished or is no longer a
   * file. A copy counts when the file's state after it equals the state before, and either that
   * state is older than a clock tick (a later write would show in ctime) or a second such copy
   * read the same bytes.
   */
  const copyFile = async (dir: FileHandle, name: string, st0: BigIntStats): Promise<FileEntry | null> => {
    let unsettledHash: string | null = null;
    for (let attempt = 1; ; attempt++) {
      opts.signal?.throwIfAborted();
      const startedMs = Date.now();
      const h = await openFileAt(dir, name);
      if (!h) return null;
      try {
        const before = await h.stat({ bigint: true });
        if (!before.isFile() || before.ino !== st0.ino) return null;
        const stored = await objects.putFile(h, Number(before.size));
        // on disk from now on, kept or not (a torn copy's object waits for collection)
        counts.addedBytes += stored.added;
        const after = await h.stat({ bigint: true });
        const steady =
          after.size === before.size &&
          after.mtimeNs === before.mtimeNs &&
          after.ctimeNs === before.ctimeNs &&
          stored.readBytes === Number(before.size);
        const settled = before.ctimeNs < BigInt(startedMs - SETTLE_MS) * 1_000_000n;
        if (steady && (settled || unsettledHash === stored.hash)) {
          account(stored.hash, stored.size);
          return {
            ...meta(name, after),
            type: 'file',
            size: stored.size,
            hash: stored.hash,
            ino: after.ino.toString(),
            // an unsettled state could change again within its tick unseen: never reuse it unread
            ctimeNs: settled ? after.ctimeNs.toString() : '0',
          };
        }
        unsettledHash = steady ? stored.hash : null;
        // an object of a torn copy is unreferenced: garbage collection removes it
      } finally {
        await h.close();
      }
      if (attempt >= MAX_ATTEMPTS) {
        throw new PaddockError(
          'TIMEOUT',
          `The file ${name} kept changing while the checkpoint copied it (${MAX_ATTEMPTS} tries): pause the job that writes it, then take the checkpoint again.`,
          { file: name },
        );
      }
      if (unsettledHash === null)
        await sleep(RETRY_MS * attempt, undefined, opts.signal ? { signal: opts.signal } : undefined);
    }
  };

  /** One entry of `dir`; a promise of it, since file copies run in the pool. null: leave it out. */
  const entryOf = async (
    dir: FileHandle,
    rel: string,
    name: string,
    prev: TreeEntry | undefined,
  ): Promise<Later<TreeEntry | null>> => {
    const st = await lstatAt(dir, name);
    if (!st) return later(null);
    const path = rel ? `${rel}/${name}` : name;
    if (st.isSymbolicLink()) {
      const target = await readlinkAt(dir, name);
      return later(target === null ? null : { ...meta(name, st), type: 'symlink', target });
    }
    if (st.isDirectory()) {
      if (st.dev !== rootDev) {
        counts.skipped++;
        return later(null);
      }
      const sub = await openDirAt(dir, name, st.ino);
      if (!sub) return later(null);
      return walk(sub, path, st, name, prev?.type === 'dir' ? prev.tree : null);
    }
    if (!st.isFile()) {
      counts.skipped++;
      return later(null);
    }
    const first = st.nlink > 1n ? firstOfInode.get(st.ino) : undefined;
    if (first) {
      // another name of a file met earlier: a link to it, unless that copy found it gone
      return {
        p: first.copied.then((e): TreeEntry | null =>
          e ? { name, type: 'hardlink', target: first.path } : null,
        ),
      };
    }
    await room();
    const copied = copyOrReuse(dir, name, st, prev);
    if (st.nlink > 1n) firstOfInode.set(st.ino, { path, copied });
    return { p: copied };
  };

  const copyOrReuse = async (
    dir: FileHandle,
    name: string,
    st: BigIntStats,
    prev: TreeEntry | undefined,
  ): Promise<TreeEntry | null> => {
    counts.files++;
    counts.bytes += Number(st.size);
    if (
      prev?.type === 'file' &&
      prev.ino === st.ino.toString() &&
      prev.ctimeNs === st.ctimeNs.toString() &&
      prev.mtimeNs === st.mtimeNs.toString() &&
      prev.size === Number(st.size)
    ) {
      account(prev.hash, prev.size);
      return { ...prev, ...meta(name, st) };
    }
    return pooled(() => copyFile(dir, name, st));
  };

  /**
   * Walks directory `dir` (open, owned by this call until its tree is stored). The returned
   * promise settles once every file under it is copied; the walk itself has moved on by then.
   */
  const walk = async (
    dir: FileHandle,
    rel: string,
    st: BigIntStats,
    name: string,
    prevTree: string | null,
  ): Promise<Later<DirEntry>> => {
    const pending: Promise<TreeEntry | null>[] = [];
    let handedOver = false;
    try {
      const prev = prevTree && (await objects.has(prevTree)) ? await objects.readTree(prevTree) : null;
      const prevByName = new Map(prev?.entries.map((e) => [e.name, e]) ?? []);
      for (const child of await namesOf(dir)) {
        opts.signal?.throwIfAborted();
        if (failure) throw failure;
        const { p } = await entryOf(dir, rel, child, prevByName.get(child));
        // handled here so a failure is not reported before allSettled below reaches it
        p.catch(() => {});
        pending.push(p);
      }
      handedOver = true;
      const p = (async () => {
        try {
          const entries = await settledAll(pending);
          const stored = await objects.putTree({
            entries: entries.filter((e): e is TreeEntry => e !== null),
          });
          counts.addedBytes += stored.added;
          account(stored.hash, stored.size);
          return { ...meta(name, st), type: 'dir', tree: stored.hash } satisfies DirEntry;
        } finally {
          await dir.close();
        }
      })();
      return { p };
    } finally {
      if (!handedOver) {
        // no copy may outlive the snapshot: wait for those started before the failure
        await Promise.allSettled(pending);
        await dir.close();
      }
    }
  };

  const rootSt = await root.stat({ bigint: true });
  // the walk owns `root` from here and closes it
  const done = await walk(root, '', rootSt, '', opts.previous);
  const rootEntry = await done.p;
  return { root: rootEntry, ...counts };
}

/** Like Promise.all, but settles only once every promise has: the first failure is thrown after. */
async function settledAll<T>(promises: Promise<T>[]): Promise<T[]> {
  const results = await Promise.allSettled(promises);
  const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (failed) throw failed.reason;
  return results.map((r) => (r as PromiseFulfilledResult<T>).value);
}
