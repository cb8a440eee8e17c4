/**
 * File operations inside the guest, so every path — symlinks included — resolves in the
 * computer's own view of the filesystem and can never reach a host file.
 */
import { randomUUID } from 'node:crypto';
import {
  closeSync,
  constants,
  fchmodSync,
  fchownSync,
  fstatSync,
  linkSync,
  lstatSync,
  openSync,
  readlinkSync,
  readSync,
  realpathSync,
  renameSync,
  type Stats,
  unlinkSync,
  writeSync,
} from 'node:fs';
import { access, lstat, readdir, readlink, stat } from 'node:fs/promises';
import type { JobAccount } from './account.js';
import { errnoOf, GuestFailure } from './failure.js';
import { inDir, LinkOnPath, openDirNoFollow, withParent } from './fs-walk.js';
import type { CallArgs, CallResult } from './protocol.js';

type EntryType = 'file' | 'dir' | 'symlink' | 'other';

/** Maps an errno of a file operation to a guest failure with a next step. */
function fsFailure(e: unknown, path: string): GuestFailure {
  switch (errnoOf(e)) {
    case 'ENOENT':
      return new GuestFailure(
        'NOT_FOUND',
        `${path} does not exist in the computer; check the path with list_files.`,
      );
    case 'ENOTDIR':
      return new GuestFailure(
        'NOT_FOUND',
        `A component of ${path} is not a directory; check the path with list_files.`,
      );
    case 'EACCES':
    case 'EPERM':
      return new GuestFailure(
        'INVALID_ARGUMENT',
        `The guest account may not access ${path}; use a path under /workspace or /tmp.`,
      );
    case 'EROFS':
      return new GuestFailure(
        'INVALID_ARGUMENT',
        `${path} is on a read-only filesystem in the computer; write under /workspace or /tmp.`,
      );
    case 'ELOOP':
      return new GuestFailure(
        'INVALID_ARGUMENT',
        `${path} has too many levels of symbolic links; fix the link or use its target path.`,
      );
    case 'ENOSPC':
    case 'EDQUOT':
    case 'EFBIG':
      return new GuestFailure(
        'LIMIT_EXCEEDED',
        `The computer's disk limit was reached while writing ${path}; free space or raise the profile's disk limit.`,
      );
    case 'EISDIR':
      return new GuestFailure('INVALID_ARGUMENT', `${path} is a directory; use list_files for directories.`);
    default:
      return new GuestFailure(
        'INTERNAL',
        `File operation on ${path} failed (${errnoOf(e) ?? String(e)}); retry or check the path.`,
      );
  }
}

function typeOf(s: { isFile(): boolean; isDirectory(): boolean; isSymbolicLink(): boolean }): EntryType {
  if (s.isSymbolicLink()) return 'symlink';
  if (s.isFile()) return 'file';
  if (s.isDirectory()) return 'dir';
  return 'other';
}

function notRegular(path: string, type: EntryType): GuestFailure {
  if (type === 'dir')
    return new GuestFailure('INVALID_ARGUMENT', `${path} is a directory; use list_files to see its entries.`);
  return new GuestFailure(
    'INVALID_ARGUMENT',
    `${path} is not a regular file (a FIFO, socket or device); file tools only handle regular files — use run_command for special files.`,
  );
}

/** Lists a directory, sorted by name, one page at a time (no symlink on the way is followed). */
export async function listFiles(args: CallArgs<'fs.list'>): Promise<CallResult<'fs.list'>> {
  let fd: number;
  try {
    fd = openDirNoFollow(args.path);
  } catch (e) {
    if (errnoOf(e) === 'ENOTDIR' && lstatSync(args.path, { throwIfNoEntry: false })?.isFile()) {
      throw new GuestFailure(
        'INVALID_ARGUMENT',
        `${args.path} is not a directory; use read_file to read a file.`,
      );
    }
    throw e instanceof GuestFailure ? e : fsFailure(e, args.path);
  }
  try {
    const names = await readdir(`/proc/self/fd/${fd}`).catch((e) => {
      throw fsFailure(e, args.path);
    });
    names.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
    const page = names.slice(args.offset, args.offset + args.limit);
    const entries = await Promise.all(
      page.map(async (name) => {
        const s = await lstat(inDir(fd, name)).catch(() => null);
        if (!s) return { name, type: 'other' as const, size: 0, mtimeMs: 0, mode: 0 };
        return { name, type: typeOf(s), size: s.size, mtimeMs: Math.round(s.mtimeMs), mode: s.mode & 0o7777 };
      }),
    );
    return { path: args.path, total: names.length, entries };
  } finally {
    closeSync(fd);
  }
}

/** A result whose bytes travel as a binary attachment of the reply. */
export class WithAttachment<T> {
  constructor(
    readonly value: T,
    readonly attachment: Buffer,
  ) {}
}

/** Opens the parent of `path` without following links; a missing parent gets the mkdir advice. */
function parentOf<T>(path: string, fn: (dirFd: number, name: string) => T): T {
  try {
    return withParent(path, fn);
  } catch (e) {
    if (e instanceof GuestFailure) throw e;
    if (errnoOf(e) === 'ENOENT') {
      const parent = path.slice(0, Math.max(1, path.lastIndexOf('/')));
      throw new GuestFailure(
        'NOT_FOUND',
        `The parent directory ${parent} does not exist; create it first (e.g. run_command "mkdir -p ${parent}").`,
      );
    }
    throw fsFailure(e, path);
  }
}

/**
 * Reads bytes of a regular file. The file is opened relative to its parent's descriptor with
 * O_NOFOLLOW, so no link swapped in on the way is followed; FIFOs and devices are refused
 * before they are opened. Synchronous calls: a regular file read of at most 64 KiB is faster
 * inline than through the thread pool.
 */
export async function readFile(args: CallArgs<'fs.read'>): Promise<WithAttachment<CallResult<'fs.read'>>> {
  return parentOf(args.path, (dirFd, name) => {
    let fd: number;
    try {
      const s = lstatSync(inDir(dirFd, name));
      if (!s.isFile()) throw notRegular(args.path, typeOf(s));
      fd = openSync(
        inDir(dirFd, name),
        constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOCTTY | constants.O_NOFOLLOW,
      );
    } catch (e) {
      throw e instanceof GuestFailure ? e : fsFailure(e, args.path);
    }
    try {
      const opened = fstatSync(fd);
      if (!opened.isFile()) throw notRegular(args.path, typeOf(opened));
      const size = opened.size;
      const want = Math.max(0, Math.min(args.byteLimit, size - args.offset));
      const buffer = Buffer.allocUnsafe(want);
      let got = 0;
      while (got < want) {
        const n = readSync(fd, buffer, got, want - got, args.offset + got);
        if (n === 0) break;
        got += n;
      }
      const openedPath = readlinkSync(`/proc/self/fd/${fd}`);
      return new WithAttachment(
        { bytesRead: got, size, eof: args.offset + got >= size, realpath: openedPath },
        buffer.subarray(0, got),
      );
    } catch (e) {
      throw e instanceof GuestFailure ? e : fsFailure(e, args.path);
    } finally {
      closeSync(fd);
    }
  });
}

/**
 * Whether a file the agent creates in this directory goes to the jobs' account: yes, except in
 * the agent's own directories (its uid, writable by nobody else), whose files jobs may read but
 * never change — large job scripts live there.
 */
function handsOver(dirFd: number): boolean {
  const s = fstatSync(dirFd);
  return !(s.uid === process.getuid?.() && (s.mode & 0o022) === 0);
}

/**
 * Writes a whole file atomically, relative to its parent's descriptor (opened without following
 * links): the bytes go to a new temporary file there (O_EXCL, O_NOFOLLOW), then `link` (create
 * only: fails if the name exists) or `rename` (replace) makes them visible at once. No symlink
 * is ever written through: the host passes either the canonical path the policy resolved (a
 * link on it is refused with an error) or, with `noLinks`, the path as written, checked by the
 * policy as if it had no link on it — a link met there then writes nothing and answers
 * `linked`, and the host resolves the path and tries again. Synchronous calls, as in readFile:
 * a write of this size is quicker inline than through the thread pool.
 */
export async function writeFile(
  args: CallArgs<'fs.write'>,
  data: Buffer,
  account: JobAccount | null = null,
): Promise<CallResult<'fs.write'>> {
  const linked = { bytesWritten: 0, created: false, linked: true as const };
  try {
    return await writeAt(args, data, account);
  } catch (e) {
    if (args.noLinks && e instanceof LinkOnPath) return linked;
    throw e;
  }
}

async function writeAt(
  args: CallArgs<'fs.write'>,
  data: Buffer,
  account: JobAccount | null,
): Promise<CallResult<'fs.write'>> {
  const exists = () =>
    new GuestFailure(
      'FILE_EXISTS',
      `${args.path} already exists; pass overwrite=true to replace it or choose another path.`,
    );
  return parentOf(args.path, (dirFd, name) => {
    const target = inDir(dirFd, name);
    let existing: Stats | null;
    try {
      existing = lstatSync(target);
    } catch (e) {
      if (errnoOf(e) !== 'ENOENT') throw fsFailure(e, args.path);
      existing = null;
    }
    if (existing?.isSymbolicLink()) throw new LinkOnPath(args.path, args.path);
    if (existing && !args.overwrite) throw exists();
    if (existing && !existing.isFile()) throw notRegular(args.path, typeOf(existing));
    const mode = existing ? existing.mode & 0o7777 : 0o644;
    const temp = inDir(dirFd, `.${name.slice(0, 100)}.${randomUUID().slice(24)}.paddock-tmp`);
    let placed = false;
    try {
      const fd = openSync(
        temp,
        constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW,
        mode,
      );
      try {
        for (let at = 0; at < data.length; ) at += writeSync(fd, data, at, data.length - at);
        if (account && handsOver(dirFd)) fchownSync(fd, account.uid, account.gid);
        fchmodSync(fd, mode);
      } finally {
        closeSync(fd);
      }
      if (args.overwrite) renameSync(temp, target);
      else linkSync(temp, target);
      placed = args.overwrite;
    } catch (e) {
      if (errnoOf(e) === 'EEXIST' && !args.overwrite) throw exists();
      throw e instanceof GuestFailure ? e : fsFailure(e, args.path);
    } finally {
      // a rename took the temporary name away; after a link, or a failure, it must go
      if (!placed) unlinkQuietly(temp);
    }
    return { bytesWritten: data.length, created: !existing };
  });
}

function unlinkQuietly(path: string): void {
  try {
    unlinkSync(path);
  } catch {
    // never created, or gone already
  }
}

/** The canonical path inside the guest, or null when the path does not exist. */
export async function realpathOf(args: CallArgs<'fs.realpath'>): Promise<CallResult<'fs.realpath'>> {
  try {
    return { path: realpathSync.native(args.path) };
  } catch (e) {
    const code = errnoOf(e);
    if (code === 'ENOENT' || code === 'ENOTDIR') return { path: null };
    throw fsFailure(e, args.path);
  }
}

/** The target text of a symlink, or null when the path is not a symlink (or does not exist). */
export async function readlinkOf(args: CallArgs<'fs.readlink'>): Promise<CallResult<'fs.readlink'>> {
  try {
    return { target: await readlink(args.path) };
  } catch (e) {
    const code = errnoOf(e);
    if (code === 'EINVAL' || code === 'ENOENT' || code === 'ENOTDIR') return { target: null };
    throw fsFailure(e, args.path);
  }
}

/** The first executable regular file `<dir>/<name>` in the given search path. */
export async function whichOf(args: CallArgs<'which'>): Promise<CallResult<'which'>> {
  if (args.name.includes('/') || args.name === '.' || args.name === '..') return { path: null };
  for (const dir of args.searchPath) {
    const candidate = dir === '/' ? `/${args.name}` : `${dir}/${args.name}`;
    try {
      await access(candidate, constants.X_OK);
      if ((await stat(candidate)).isFile()) return { path: candidate };
    } catch {
      // Not here.
    }
  }
  return { path: null };
}
