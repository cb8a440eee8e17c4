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
  readSync,
  renameSync,
  type Stats,
  unlinkSync,
  writeSync,
} from 'node:fs';
import { access, lstat, readdir, stat } from 'node:fs/promises';
import type { JobAccount } from './account.js';
import { errnoOf, GuestFailure } from './failure.js';
import { descriptorIO, inDir, reopenPath } from './fs-walk.js';
import { WithAttachment } from './handlers.js';
import type { FileScope } from './path-scope.js';
import type { CallArgs, CallResult } from './protocol.js';
import { type Destination, ScopedWalk } from './scoped-walk.js';

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

/** Walks `path` within the call's scope with descriptors (scoped-walk.ts). */
function walker(scope: FileScope): ScopedWalk<number> {
  return new ScopedWalk(descriptorIO, scope);
}

/** Runs `fn` on a walk's answer; system errors become guest failures about `path`. */
async function fsStep<T>(path: string, fn: () => T | Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (e) {
    throw e instanceof GuestFailure ? e : fsFailure(e, path);
  }
}

/**
 * Lists a directory, sorted by name, one page at a time. The directory is reached within the
 * scope (scoped-walk.ts); its entries are described without following them.
 */
export async function listFiles(args: CallArgs<'fs.list'>): Promise<CallResult<'fs.list'>> {
  const dir = await fsStep(args.path, () => walker(args.scope).reach(args.path));
  try {
    if (dir.type !== 'dir') {
      throw new GuestFailure(
        'INVALID_ARGUMENT',
        dir.type === 'file'
          ? `${args.path} is not a directory; use read_file to read a file.`
          : `${args.path} is not a directory.`,
      );
    }
    const names = await readdir(reopenPath(dir.handle)).catch((e) => {
      throw fsFailure(e, args.path);
    });
    names.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
    const page = names.slice(args.offset, args.offset + args.limit);
    const entries = await Promise.all(
      page.map(async (name) => {
        const s = await lstat(inDir(dir.handle, name)).catch(() => null);
        if (!s) return { name, type: 'other' as const, size: 0, mtimeMs: 0, mode: 0 };
        return { name, type: typeOf(s), size: s.size, mtimeMs: Math.round(s.mtimeMs), mode: s.mode & 0o7777 };
      }),
    );
    return { path: args.path, total: names.length, entries, rule: dir.rule };
  } finally {
    descriptorIO.close(dir.handle);
  }
}

/**
 * Reads bytes of a regular file reached within the scope. The walk's descriptor of the file is
 * reopened for reading (FIFOs and devices are refused before, so nothing blocks), so the bytes
 * come from exactly the file that was judged. Synchronous reads: a regular file read of at most
 * 64 KiB is faster inline than through the thread pool.
 */
export async function readFile(args: CallArgs<'fs.read'>): Promise<WithAttachment<CallResult<'fs.read'>>> {
  const file = await fsStep(args.path, () => walker(args.scope).reach(args.path));
  let fd: number | null = null;
  try {
    if (file.type !== 'file') throw notRegular(args.path, file.type);
    // the magic link names the very file judged (O_NOFOLLOW would refuse the magic link itself)
    fd = openSync(reopenPath(file.handle), constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOCTTY);
    const size = fstatSync(fd).size;
    const want = Math.max(0, Math.min(args.byteLimit, size - args.offset));
    const buffer = Buffer.allocUnsafe(want);
    let got = 0;
    while (got < want) {
      const n = readSync(fd, buffer, got, want - got, args.offset + got);
      if (n === 0) break;
      got += n;
    }
    return new WithAttachment(
      { bytesRead: got, size, eof: args.offset + got >= size, rule: file.rule },
      buffer.subarray(0, got),
    );
  } catch (e) {
    throw e instanceof GuestFailure ? e : fsFailure(e, args.path);
  } finally {
    if (fd !== null) closeSync(fd);
    descriptorIO.close(file.handle);
  }
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
 * Writes a whole file atomically where the path leads within the scope (scoped-walk.ts): the
 * bytes go to a new temporary file in the destination's directory, opened by descriptor
 * (O_EXCL, O_NOFOLLOW), then `link` (create only: fails if the name exists) or `rename`
 * (replace) makes them visible at once. A link at the name is followed to find the destination,
 * and a create-only write refuses it as an existing name (as `O_CREAT | O_EXCL` does), so nothing
 * is created through a dangling link. The directory is judged again, by its descriptor, just
 * before the file is placed. Synchronous calls, as in readFile.
 */
export async function writeFile(
  args: CallArgs<'fs.write'>,
  data: Buffer,
  account: JobAccount | null = null,
): Promise<CallResult<'fs.write'>> {
  const walk = walker(args.scope);
  const to = await fsStep(args.path, () => walk.destination(args.path));
  try {
    return writeAt(args, to, data, account, () => {
      const dir = descriptorIO.where(to.dir);
      walk.judge(args.path, dir === '/' ? `/${to.name}` : `${dir}/${to.name}`, to.links);
    });
  } finally {
    descriptorIO.close(to.dir);
  }
}

function writeAt(
  args: CallArgs<'fs.write'>,
  to: Destination<number>,
  data: Buffer,
  account: JobAccount | null,
  recheck: () => void,
): CallResult<'fs.write'> {
  const exists = () =>
    new GuestFailure(
      'FILE_EXISTS',
      `${args.path} already exists; pass overwrite=true to replace it or choose another path.`,
    );
  if (!args.overwrite && (to.namedLink || to.existing !== 'missing')) throw exists();
  if (to.existing === 'dir' || to.existing === 'other') throw notRegular(args.path, to.existing);
  const target = inDir(to.dir, to.name);
  let existing: Stats | null;
  try {
    existing = lstatSync(target);
  } catch (e) {
    if (errnoOf(e) !== 'ENOENT') throw fsFailure(e, args.path);
    existing = null;
  }
  if (existing && !args.overwrite) throw exists();
  if (existing && !existing.isFile()) {
    throw new GuestFailure('INVALID_ARGUMENT', `${args.path} changed while it was being written; try again.`);
  }
  const mode = existing ? existing.mode & 0o7777 : 0o644;
  const temp = inDir(to.dir, `.${to.name.slice(0, 100)}.${randomUUID().slice(24)}.paddock-tmp`);
  let placed = false;
  try {
    const fd = openSync(
      temp,
      constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW,
      mode,
    );
    try {
      for (let at = 0; at < data.length; ) at += writeSync(fd, data, at, data.length - at);
      if (account && handsOver(to.dir)) fchownSync(fd, account.uid, account.gid);
      fchmodSync(fd, mode);
    } finally {
      closeSync(fd);
    }
    // the directory may have moved since it was judged: judge where it is now
    recheck();
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
  return { bytesWritten: data.length, created: !existing, rule: to.rule };
}

function unlinkQuietly(path: string): void {
  try {
    unlinkSync(path);
  } catch {
    // never created, or gone already
  }
}

/** The canonical path of a directory reached within the scope (a job's working directory). */
export async function resolveDir(args: CallArgs<'fs.resolve'>): Promise<CallResult<'fs.resolve'>> {
  const dir = await fsStep(args.path, () => walker(args.scope).reach(args.path));
  descriptorIO.close(dir.handle);
  if (dir.type !== 'dir') {
    throw new GuestFailure('NOT_FOUND', `${args.path} is not a directory in the computer; pass a directory.`);
  }
  return { path: dir.path, rule: dir.rule };
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
