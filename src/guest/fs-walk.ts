/**
 * Opening guest paths without ever following a symlink, so nothing can be swapped between the
 * policy's check and the operation. Node has no `openat`, so a directory is opened component by
 * component — each one `O_PATH | O_DIRECTORY | O_NOFOLLOW` relative to the previous descriptor
 * through `/proc/self/fd/<n>/<name>` (the kernel resolves that magic link to the opened directory
 * itself, not to a name) — and every later operation names its target relative to the final
 * descriptor the same way. A component that is a symlink (or stops being a directory) fails the
 * walk; nothing is re-resolved by name in between.
 *
 * The file tools resolve paths with {@link descriptorIO} (scoped-walk.ts), which follows links
 * by reading them; `openDirNoFollow` opens a canonical path that must have no link on it (a job's
 * working directory).
 */
import { closeSync, constants, fstatSync, lstatSync, openSync, readlinkSync, type Stats } from 'node:fs';
import { errnoOf, GuestFailure } from './failure.js';
import type { WalkIO, WalkStep } from './scoped-walk.js';

/** Linux O_PATH (not exported by Node). */
const O_PATH = 0o10000000;
const DIR_FLAGS = O_PATH | constants.O_DIRECTORY | constants.O_NOFOLLOW;
/** Linux O_CLOEXEC (Node sets it itself, stated for clarity). */
const O_CLOEXEC = 0o2000000;

/** The path of `name` inside the directory open as `fd`. */
export function inDir(fd: number, name: string): string {
  return `/proc/self/fd/${fd}/${name}`;
}

/** Splits an absolute guest path into its components; refuses `.`, `..` and empty ones. */
export function components(path: string): string[] {
  if (!path.startsWith('/')) throw new GuestFailure('INVALID_ARGUMENT', `${path} is not an absolute path.`);
  const parts = path.split('/').slice(1);
  if (parts.length === 1 && parts[0] === '') return [];
  if (parts.some((p) => p === '' || p === '.' || p === '..')) {
    throw new GuestFailure(
      'INVALID_ARGUMENT',
      `${path} is not a normalised path; remove empty, . and .. segments.`,
    );
  }
  return parts;
}

/** A symlink met where a directory of the path was expected: nothing was opened through it. */
export class LinkOnPath extends GuestFailure {
  constructor(path: string, link: string) {
    super(
      'INVALID_ARGUMENT',
      `${path} has a symbolic link on it (${link}) that was not there when the path was checked; try again.`,
    );
  }
}

/**
 * Opens the directory `path` without following any symlink and checks that the descriptor names
 * exactly that path. The caller closes it. A component that is a symlink throws `LinkOnPath`;
 * other errors are thrown as they come (ENOTDIR, ENOENT…).
 */
export function openDirNoFollow(path: string): number {
  let fd = openSync('/', DIR_FLAGS | O_CLOEXEC);
  try {
    const names = components(path);
    for (let i = 0; i < names.length; i++) {
      let next: number;
      try {
        next = openSync(inDir(fd, names[i]!), DIR_FLAGS | O_CLOEXEC);
      } catch (e) {
        if (isLink(inDir(fd, names[i]!))) throw new LinkOnPath(path, `/${names.slice(0, i + 1).join('/')}`);
        throw e;
      }
      closeSync(fd);
      fd = next;
    }
    const opened = readlinkSync(`/proc/self/fd/${fd}`);
    if (opened !== path) {
      throw new GuestFailure(
        'INVALID_ARGUMENT',
        `${path} changed while it was opened (now ${opened}); try again.`,
      );
    }
    return fd;
  } catch (e) {
    closeSync(fd);
    throw e;
  }
}

function isLink(path: string): boolean {
  try {
    return lstatSync(path).isSymbolicLink();
  } catch {
    return false;
  }
}

/** An object opened by {@link descriptorIO} (an `O_PATH` descriptor) is read through this path. */
export function reopenPath(fd: number): string {
  return `/proc/self/fd/${fd}`;
}

/** Looks `name` up in `dir` once; null when it changed between the lookup and the read of its link. */
function stepOnce(dir: number, name: string): WalkStep<number> | null {
  let fd: number;
  try {
    fd = openSync(inDir(dir, name), O_PATH | constants.O_NOFOLLOW | O_CLOEXEC);
  } catch (e) {
    const code = errnoOf(e);
    if (code === 'ENOENT' || code === 'ENOTDIR') return { type: 'missing' };
    throw e;
  }
  let st: Stats;
  try {
    st = fstatSync(fd);
  } catch (e) {
    closeSync(fd);
    throw e;
  }
  if (st.isDirectory()) return { type: 'dir', handle: fd };
  if (!st.isSymbolicLink()) return { type: st.isFile() ? 'file' : 'other', handle: fd };
  closeSync(fd);
  try {
    return { type: 'link', target: readlinkSync(inDir(dir, name)) };
  } catch (e) {
    const code = errnoOf(e);
    if (code === 'EINVAL' || code === 'ENOENT') return null;
    throw e;
  }
}

/**
 * The walk of scoped-walk.ts over descriptors: every object is an `O_PATH` descriptor opened
 * relative to its directory's descriptor without following a link, and named by the kernel
 * (`/proc/self/fd/<n>`) when judged. Synchronous: each step is a system call or two.
 */
export const descriptorIO = {
  root: () => openSync('/', DIR_FLAGS | O_CLOEXEC),
  step(dir: number, name: string): WalkStep<number> {
    // a name that stops being a link between the lookup and the read of its text is looked up again
    for (let tries = 0; tries < 8; tries++) {
      const found = stepOnce(dir, name);
      if (found) return found;
    }
    throw new GuestFailure('INVALID_ARGUMENT', `${name} keeps changing while it is looked up; try again.`);
  },
  parent: (dir: number) => openSync(inDir(dir, '..'), DIR_FLAGS | O_CLOEXEC),
  where: (fd: number) => readlinkSync(reopenPath(fd)),
  close(fd: number) {
    try {
      closeSync(fd);
    } catch {
      // already closed
    }
  },
} satisfies WalkIO<number>;
