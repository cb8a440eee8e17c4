/**
 * Reaching a directory's children through an open descriptor of that directory, never through a
 * path re-resolved from the root: `/proc/self/fd/<fd>/<name>` resolves `<fd>` to the very
 * directory opened earlier, so a directory swapped for a symlink after it was opened cannot send
 * a read elsewhere; and every final component is opened with `O_NOFOLLOW`. Node has no `openat`,
 * this is its equivalent on Linux.
 */

import type { BigIntStats } from 'node:fs';
import { constants } from 'node:fs';
import { type FileHandle, lstat, open, readdir, readlink } from 'node:fs/promises';

const { O_RDONLY, O_DIRECTORY, O_NOFOLLOW, O_NONBLOCK, O_NOCTTY } = constants;

/** The path that names child `name` of the open directory `dir`. */
export function childPath(dir: FileHandle, name: string): string {
  return `/proc/self/fd/${dir.fd}/${name}`;
}

/** Opens the root of a walk: a directory, not followed if it is a symlink. */
export async function openRootDir(path: string): Promise<FileHandle> {
  return open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
}

/**
 * Opens child directory `name` of `dir`; null when it is no longer the directory `expectIno`
 * (replaced, removed or swapped for a symlink since it was examined).
 */
export async function openDirAt(
  dir: FileHandle,
  name: string,
  expectIno: bigint,
): Promise<FileHandle | null> {
  let h: FileHandle;
  try {
    h = await open(childPath(dir, name), O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
  } catch (e) {
    if (isGone(e)) return null;
    throw e;
  }
  const st = await h.stat({ bigint: true });
  if (st.ino !== expectIno || !st.isDirectory()) {
    await h.close();
    return null;
  }
  return h;
}

/** Opens child `name` of `dir` for reading without following a symlink, or blocking on a FIFO; null when gone. */
export async function openFileAt(dir: FileHandle, name: string): Promise<FileHandle | null> {
  try {
    return await open(childPath(dir, name), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY);
  } catch (e) {
    if (isGone(e)) return null;
    throw e;
  }
}

/** lstat of child `name` of `dir` (a symlink is described, not followed); null when gone. */
export async function lstatAt(dir: FileHandle, name: string): Promise<BigIntStats | null> {
  try {
    return await lstat(childPath(dir, name), { bigint: true });
  } catch (e) {
    if (isGone(e)) return null;
    throw e;
  }
}

/** The text of symlink `name` in `dir`; null when it is gone or no longer a symlink. */
export async function readlinkAt(dir: FileHandle, name: string): Promise<string | null> {
  try {
    return await readlink(childPath(dir, name));
  } catch (e) {
    if (isGone(e) || (e as NodeJS.ErrnoException).code === 'EINVAL') return null;
    throw e;
  }
}

/** The names in the open directory `dir`, sorted (byte order of their UTF-8 form). */
export async function namesOf(dir: FileHandle): Promise<string[]> {
  const names = await readdir(`/proc/self/fd/${dir.fd}`);
  return names.sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b)));
}

/** A child that vanished or changed kind between two steps: the walk sees it as gone. */
export function isGone(e: unknown): boolean {
  const code = (e as NodeJS.ErrnoException).code;
  return code === 'ENOENT' || code === 'ELOOP' || code === 'ENOTDIR' || code === 'ENXIO';
}
