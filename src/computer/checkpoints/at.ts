/**
 * Reaching a directory's children through an open descriptor of that directory, never through a
 * path re-resolved from the root: `/proc/self/fd/<fd>/<name>` resolves `<fd>` to the very
 * directory opened earlier, so a directory swapped for a symlink after it was opened cannot send
 * a read elsewhere; and every final component is opened with `O_NOFOLLOW`. Node has no `openat`,
 * this is its equivalent on Linux. Synchronous, for the checkpoint worker.
 */
import {
  type BigIntStats,
  closeSync,
  constants,
  fstatSync,
  lstatSync,
  openSync,
  readdirSync,
  readlinkSync,
} from 'node:fs';

const { O_RDONLY, O_DIRECTORY, O_NOFOLLOW, O_NONBLOCK, O_NOCTTY } = constants;

/** The path that names child `name` of the open directory `dir`. */
export function childPath(dir: number, name: string): string {
  return `/proc/self/fd/${dir}/${name}`;
}

/** Opens the root of a walk: a directory, not followed if it is a symlink. */
export function openRootDir(path: string): number {
  return openSync(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
}

/**
 * Opens child directory `name` of `dir`; null when it is no longer the directory `expectIno`
 * (replaced, removed or swapped for a symlink since it was examined).
 */
export function openDirAt(dir: number, name: string, expectIno: bigint): number | null {
  let fd: number;
  try {
    fd = openSync(childPath(dir, name), O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
  } catch (e) {
    if (isGone(e)) return null;
    throw e;
  }
  const st = fstatSync(fd, { bigint: true });
  if (st.ino !== expectIno || !st.isDirectory()) {
    closeSync(fd);
    return null;
  }
  return fd;
}

/** Opens child `name` of `dir` for reading without following a symlink, or blocking on a FIFO; null when gone. */
export function openFileAt(dir: number, name: string): number | null {
  try {
    return openSync(childPath(dir, name), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY);
  } catch (e) {
    if (isGone(e)) return null;
    throw e;
  }
}

/** lstat of child `name` of `dir` (a symlink is described, not followed); null when gone. */
export function lstatAt(dir: number, name: string): BigIntStats | null {
  try {
    return lstatSync(childPath(dir, name), { bigint: true });
  } catch (e) {
    if (isGone(e)) return null;
    throw e;
  }
}

/** The text of symlink `name` in `dir`; null when it is gone or no longer a symlink. */
export function readlinkAt(dir: number, name: string): string | null {
  try {
    return readlinkSync(childPath(dir, name));
  } catch (e) {
    if (isGone(e) || (e as NodeJS.ErrnoException).code === 'EINVAL') return null;
    throw e;
  }
}

/** The names in the open directory `dir`, sorted by code unit (a stable order for trees). */
export function namesOf(dir: number): string[] {
  return readdirSync(`/proc/self/fd/${dir}`).sort();
}

/** A child that vanished or changed kind between two steps: the walk sees it as gone. */
export function isGone(e: unknown): boolean {
  const code = (e as NodeJS.ErrnoException).code;
  return code === 'ENOENT' || code === 'ELOOP' || code === 'ENOTDIR' || code === 'ENXIO';
}
