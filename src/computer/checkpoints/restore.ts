/**
 * Writing a checkpoint's tree into an empty directory: directories first (owner-only until the
 * end), then files copied out of their objects, then hard links, then symlinks, and last each
 * directory's owner, mode and mtime, deepest first (a read-only directory must not stop its own
 * children being made, and making a child changes its parent's mtime). No symlink exists until
 * every file and hard link is in place, so no step can be led outside the directory by one.
 */
import { constants } from 'node:fs';
import {
  chmod,
  chown,
  copyFile,
  lchown,
  link,
  lstat,
  lutimes,
  mkdir,
  readdir,
  symlink,
  utimes,
} from 'node:fs/promises';
import { join } from 'node:path';
import { PaddockError } from '../../shared/errors.js';
import type { ObjectStore } from './objects.js';
import type { DirEntry, FileEntry, LinkEntry, SymlinkEntry } from './types.js';

type Placed<T> = { path: string; entry: T };

/**
 * Seconds since the epoch (what Node's utimes takes) from nanoseconds as text. A double holds
 * about a quarter of a microsecond at today's dates, so the time is kept to the microsecond: the
 * value aims at the middle of its microsecond, so rounding either way lands in it.
 */
function secondsOf(ns: string): number {
  const n = BigInt(ns);
  const micros = (n % 1_000_000_000n) / 1000n;
  return Number(n / 1_000_000_000n) + (Number(micros) + 0.5) / 1e6;
}

function checkName(name: string): void {
  if (!name || name === '.' || name === '..' || name.includes('/') || name.includes('\0')) {
    throw new PaddockError(
      'INTERNAL',
      `A checkpoint holds the invalid name ${JSON.stringify(name)}: it is damaged; restore another one.`,
    );
  }
}

/** Runs `work` over `items`, at most `concurrency` at once; settles after all, throwing the first failure. */
async function eachLimited<T>(
  items: T[],
  concurrency: number,
  work: (item: T) => Promise<void>,
): Promise<void> {
  let next = 0;
  let failure: unknown = null;
  const lane = async (): Promise<void> => {
    while (next < items.length && failure === null) {
      const item = items[next++] as T;
      try {
        await work(item);
      } catch (e) {
        failure ??= e;
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, items.length) }, lane));
  if (failure !== null) throw failure;
}

/** Makes `dest` (absent or an empty directory) hold exactly the tree of `root`. */
export async function restoreTree(
  objects: ObjectStore,
  root: DirEntry,
  dest: string,
  concurrency: number,
): Promise<void> {
  await prepareDest(dest);
  const dirs: Placed<DirEntry>[] = [{ path: dest, entry: root }];
  const files: Placed<FileEntry>[] = [];
  const links: Placed<LinkEntry>[] = [];
  const symlinks: Placed<SymlinkEntry>[] = [];
  // directories in walk order (parents before children), made as they are met
  for (let i = 0; i < dirs.length; i++) {
    const { path, entry } = dirs[i] as Placed<DirEntry>;
    const tree = await objects.readTree(entry.tree);
    for (const e of tree.entries) {
      checkName(e.name);
      const p = join(path, e.name);
      if (e.type === 'dir') {
        await mkdir(p, { mode: 0o700 });
        dirs.push({ path: p, entry: e });
      } else if (e.type === 'file') files.push({ path: p, entry: e });
      else if (e.type === 'hardlink') links.push({ path: p, entry: e });
      else symlinks.push({ path: p, entry: e });
    }
  }
  await eachLimited(files, concurrency, async ({ path, entry }) => {
    await copyFile(objects.pathOf(entry.hash), path, constants.COPYFILE_EXCL);
    await chown(path, entry.uid, entry.gid);
    await chmod(path, entry.mode);
    const t = secondsOf(entry.mtimeNs);
    await utimes(path, t, t);
  });
  for (const { path, entry } of links) {
    for (const part of entry.target.split('/')) checkName(part);
    await link(join(dest, entry.target), path);
  }
  await eachLimited(symlinks, concurrency, async ({ path, entry }) => {
    await symlink(entry.target, path);
    await lchown(path, entry.uid, entry.gid);
    const t = secondsOf(entry.mtimeNs);
    await lutimes(path, t, t);
  });
  for (const { path, entry } of dirs.reverse()) {
    await chown(path, entry.uid, entry.gid);
    await chmod(path, entry.mode);
    const t = secondsOf(entry.mtimeNs);
    await utimes(path, t, t);
  }
}

async function prepareDest(dest: string): Promise<void> {
  try {
    await mkdir(dest, { mode: 0o700 });
    return;
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
  }
  const st = await lstat(dest);
  if (!st.isDirectory() || (await readdir(dest)).length > 0) {
    throw new PaddockError(
      'FILE_EXISTS',
      `${dest} is not an empty directory: a checkpoint is restored only into an empty or new directory; pick another place or empty it first.`,
    );
  }
  await chmod(dest, 0o700);
}
