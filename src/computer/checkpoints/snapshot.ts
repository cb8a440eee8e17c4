/**
 * Taking a snapshot of a directory tree into the object store: depth first in name order through
 * open directory descriptors (at.ts), each file copied with a check of its state before and after
 * (size, mtime, ctime, inode) so a file changing under the copy is copied again, never kept torn.
 * A file whose inode, size, mtime and ctime equal those in the previous checkpoint is not read.
 * Synchronous, in the checkpoint worker.
 */
import { type BigIntStats, closeSync, fstatSync } from 'node:fs';
import { PaddockError } from '../../shared/errors.js';
import { lstatAt, namesOf, openDirAt, openFileAt, readlinkAt } from './at.js';
import type { ObjectStore } from './objects.js';
import { opaqueDirs } from './opaque-dirs.js';
import type { DirEntry, FileEntry, Tree, TreeEntry } from './types.js';

/**
 * A change shows in ctime only if it falls in a later clock tick than the ctime read before the
 * copy; a file changed less than this long before its copy began is read twice and kept when both
 * reads agree.
 */
const SETTLE_MS = 20;
/** Pause before copying again a file that changed during its copy (times the attempt). */
const RETRY_MS = 5;
/** Copies of one file before the snapshot gives up on it. */
const MAX_ATTEMPTS = 8;

/** What a snapshot needs besides the tree. */
export interface SnapshotOptions {
  objects: ObjectStore;
  /** The previous checkpoint's root tree: its files are reused when unchanged. */
  previous: string | null;
  /** Stops the snapshot (LIMIT_EXCEEDED) once its own distinct bytes pass this. */
  maxBytes: number;
  /** Names the setting `maxBytes` comes from, for the error. */
  maxBytesSetting: string;
  /**
   * The tree is an overlay's upper layer (a computer's root layer): keep its whiteouts (character
   * devices 0/0) and which directories are opaque, instead of skipping devices.
   */
  overlay?: boolean;
  /** Bytes the same checkpoint already holds in another tree (counted against `maxBytes` too). */
  heldBefore?: number;
}

/** The snapshot's root and what it cost. */
export interface SnapshotResult {
  root: DirEntry;
  /** Bytes of objects written that the store did not hold (torn copies included until collected). */
  addedBytes: number;
  files: number;
  bytes: number;
  skipped: number;
  /** Bytes of the distinct objects this snapshot names (what it counts against `maxBytes`). */
  heldBytes: number;
}

const pause = new Int32Array(new SharedArrayBuffer(4));
/** Blocks this (worker) thread for `ms`. */
function sleepSync(ms: number): void {
  Atomics.wait(pause, 0, 0, ms);
}

const meta = (name: string, st: BigIntStats) => ({
  name,
  mode: Number(st.mode & 0o7777n),
  uid: Number(st.uid),
  gid: Number(st.gid),
  mtimeNs: st.mtimeNs.toString(),
});

const same = (a: BigIntStats, b: BigIntStats): boolean =>
  a.ino === b.ino && a.size === b.size && a.mtimeNs === b.mtimeNs && a.ctimeNs === b.ctimeNs;

/** Takes a snapshot of the tree whose root directory is open as `root` (closed when done). */
export function snapshotTree(root: number, opts: SnapshotOptions): SnapshotResult {
  const { objects } = opts;
  const counts = { addedBytes: 0, files: 0, bytes: 0, skipped: 0 };
  let ownBytes = opts.heldBefore ?? 0;
  const seenObjects = new Set<string>();
  const firstOfInode = new Map<bigint, { path: string; copied: boolean }>();
  const opaque = opts.overlay ? opaqueDirs(root) : null;

  /** Counts object `hash` as part of this checkpoint (once), against `maxBytes`. */
  const account = (hash: string, size: number): void => {
    if (seenObjects.has(hash)) return;
    seenObjects.add(hash);
    ownBytes += size;
    if (ownBytes > opts.maxBytes) {
      throw new PaddockError(
        'LIMIT_EXCEEDED',
        `This checkpoint would hold more than ${opts.maxBytes} bytes, the limit set by ${opts.maxBytesSetting}: raise that setting or remove large files from the computer, then take the checkpoint again.`,
        { setting: opts.maxBytesSetting, limit: opts.maxBytes },
      );
    }
  };

  /**
   * Copies one regular file, again while it keeps changing; null when it vanished or is no longer
   * that file. A copy counts when the file's state after it equals the state before, and either
   * that state is older than a clock tick or a second such copy read the same bytes.
   */
  const copyFile = (dir: number, name: string, st0: BigIntStats): FileEntry | null => {
    let unsettledHash: string | null = null;
    for (let attempt = 1; ; attempt++) {
      const startedMs = Date.now();
      const fd = openFileAt(dir, name);
      if (fd === null) return null;
      try {
        const before = fstatSync(fd, { bigint: true });
        if (!before.isFile() || before.ino !== st0.ino) return null;
        const stored = objects.putFile(fd, Number(before.size));
        counts.addedBytes += stored.added;
        const after = fstatSync(fd, { bigint: true });
        const steady = same(before, after) && stored.readBytes === Number(before.size);
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
        // the object of a torn copy is referenced by nothing: collection removes it
      } finally {
        closeSync(fd);
      }
      if (attempt >= MAX_ATTEMPTS) {
        throw new PaddockError(
          'TIMEOUT',
          `The file ${name} kept changing while the checkpoint copied it (${MAX_ATTEMPTS} tries): pause the job that writes it, then take the checkpoint again.`,
          { file: name },
        );
      }
      if (unsettledHash === null) sleepSync(RETRY_MS * attempt);
    }
  };

  const fileEntry = (
    dir: number,
    name: string,
    path: string,
    st: BigIntStats,
    prev?: TreeEntry,
  ): TreeEntry | null => {
    const first = st.nlink > 1n ? firstOfInode.get(st.ino) : undefined;
    if (first) return first.copied ? { name, type: 'hardlink', target: first.path } : null;
    counts.files++;
    counts.bytes += Number(st.size);
    let entry: TreeEntry | null;
    if (
      prev?.type === 'file' &&
      prev.ino === st.ino.toString() &&
      prev.ctimeNs === st.ctimeNs.toString() &&
      prev.size === Number(st.size) &&
      prev.mtimeNs === st.mtimeNs.toString()
    ) {
      account(prev.hash, prev.size);
      entry = { ...prev, ...meta(name, st) };
    } else entry = copyFile(dir, name, st);
    if (st.nlink > 1n) firstOfInode.set(st.ino, { path, copied: entry !== null });
    return entry;
  };

  /** Walks directory `dir` (open; closed here) into its tree. */
  const walk = (
    dir: number,
    rel: string,
    st: BigIntStats,
    name: string,
    prevTree: string | null,
  ): DirEntry => {
    try {
      let prev: Tree | null = null;
      if (prevTree) {
        try {
          prev = objects.readTree(prevTree);
        } catch {
          prev = null;
        }
      }
      const prevByName = new Map(prev?.entries.map((e) => [e.name, e]) ?? []);
      const entries: TreeEntry[] = [];
      for (const child of namesOf(dir)) {
        const cst = lstatAt(dir, child);
        if (!cst) continue;
        const path = rel ? `${rel}/${child}` : child;
        const before = prevByName.get(child);
        let entry: TreeEntry | null = null;
        if (cst.isSymbolicLink()) {
          const target = readlinkAt(dir, child);
          entry = target === null ? null : { ...meta(child, cst), type: 'symlink', target };
        } else if (cst.isDirectory()) {
          if (cst.dev !== st.dev) counts.skipped++;
          else {
            const sub = openDirAt(dir, child, cst.ino);
            if (sub !== null)
              entry = walk(sub, path, cst, child, before?.type === 'dir' ? before.tree : null);
          }
        } else if (cst.isFile()) entry = fileEntry(dir, child, path, cst, before);
        else if (opaque && cst.isCharacterDevice() && cst.rdev === 0n)
          // overlayfs links whiteouts to one shared inode: each is its own entry, never a hard link
          entry = { ...meta(child, cst), type: 'whiteout' };
        else counts.skipped++;
        if (entry) entries.push(entry);
      }
      // a directory whose entries all stayed as they were is the previous tree, not stored again
      const unchanged =
        prev && prevTree && sameEntries(entries, prev.entries) ? objects.knownTree(prevTree) : null;
      const stored = unchanged ?? objects.putTree({ entries });
      counts.addedBytes += stored.added;
      account(stored.hash, stored.size);
      return {
        ...meta(name, st),
        type: 'dir',
        tree: stored.hash,
        ...(opaque?.has(st.ino) ? { opaque: true as const } : {}),
      };
    } finally {
      closeSync(dir);
    }
  };

  const rootEntry = walk(root, '', fstatSync(root, { bigint: true }), '', opts.previous);
  return { root: rootEntry, ...counts, heldBytes: ownBytes };
}

/** Whether two lists of entries say the same, entry by entry (every field of an entry is a primitive). */
function sameEntries(a: TreeEntry[], b: TreeEntry[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) {
    const x = a[i] as unknown as Record<string, unknown>;
    const y = b[i] as unknown as Record<string, unknown>;
    const keys = Object.keys(x);
    if (keys.length !== Object.keys(y).length) return false;
    for (const k of keys) if (x[k] !== y[k]) return false;
  }
  return true;
}
