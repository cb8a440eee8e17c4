/**
 * Opening guest paths without ever following a symlink, so nothing can be swapped between the
 * policy's check and the operation. Node has no `openat`, so a directory is opened component by
 * component — each one `O_PATH | O_DIRECTORY | O_NOFOLLOW` relative to the previous descriptor
 * through `/proc/self/fd/<n>/<name>` (the kernel resolves that magic link to the opened directory
 * itself, not to a name) — and every later operation names its target relative to the final
 * descriptor the same way. A component that is a symlink (or stops being a directory) fails the
 * walk; nothing is re-resolved by name in between.
 *
 * The host passes canonical paths (the policy's resolved ones), so a legitimate path never has
 * a symlink in it.
 */
import { closeSync, constants, lstatSync, openSync, readlinkSync } from 'node:fs';
import { GuestFailure } from './failure.js';

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

/** Runs `fn` with the parent directory of `path` open (no link followed) and the last name. */
export function withParent<T>(path: string, fn: (dirFd: number, name: string) => T): T {
  const parts = components(path);
  const name = parts.pop();
  if (name === undefined) throw new GuestFailure('INVALID_ARGUMENT', 'The root directory has no parent.');
  const fd = openDirNoFollow(`/${parts.join('/')}`);
  let result: T;
  try {
    result = fn(fd, name);
  } catch (e) {
    closeSync(fd);
    throw e;
  }
  if (result instanceof Promise) return result.finally(() => closeSync(fd)) as T;
  closeSync(fd);
  return result;
}
