/**
 * Writing a checkpoint's tree into an empty directory: directories first (owner-only until the
 * end), then files copied out of their objects, then hard links, then symlinks, and last each
 * directory's owner, mode and mtime, deepest first (a read-only directory must not stop its own
 * children being made, and making a child changes its parent's mtime). A root layer's whiteouts
 * (character devices 0/0, by `mknod`) and opaque directories (`setfattr`) are made after the
 * files, still before any symlink: no symlink exists until every file, hard link, whiteout and
 * attribute is in place, so no step — nor a program given a path — can be led outside the
 * directory by one. Synchronous, in the checkpoint worker.
 */
import { spawnSync } from 'node:child_process';
import {
  chmodSync,
  chownSync,
  constants,
  copyFileSync,
  lchownSync,
  linkSync,
  lstatSync,
  lutimesSync,
  mkdirSync,
  readdirSync,
  symlinkSync,
  utimesSync,
} from 'node:fs';
import { join } from 'node:path';
import { PaddockError } from '../../shared/errors.js';
import type { ObjectStore } from './objects.js';
import type { DirEntry, FileEntry, LinkEntry, SymlinkEntry, WhiteoutEntry } from './types.js';

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

/** Makes `dest` (absent or an empty directory) hold exactly the tree of `root`. */
export function restoreTree(objects: ObjectStore, root: DirEntry, dest: string): void {
  prepareDest(dest);
  const dirs: Placed<DirEntry>[] = [{ path: dest, entry: root }];
  const files: Placed<FileEntry>[] = [];
  const links: Placed<LinkEntry>[] = [];
  const symlinks: Placed<SymlinkEntry>[] = [];
  const whiteouts: Placed<WhiteoutEntry>[] = [];
  // directories in walk order (parents before children), made as they are met
  for (let i = 0; i < dirs.length; i++) {
    const { path, entry } = dirs[i] as Placed<DirEntry>;
    for (const e of objects.readTree(entry.tree).entries) {
      checkName(e.name);
      const p = join(path, e.name);
      if (e.type === 'dir') {
        mkdirSync(p, { mode: 0o700 });
        dirs.push({ path: p, entry: e });
      } else if (e.type === 'file') files.push({ path: p, entry: e });
      else if (e.type === 'hardlink') links.push({ path: p, entry: e });
      else if (e.type === 'whiteout') whiteouts.push({ path: p, entry: e });
      else symlinks.push({ path: p, entry: e });
    }
  }
  for (const { path, entry } of files) {
    copyFileSync(objects.pathOf(entry.hash), path, constants.COPYFILE_EXCL);
    chownSync(path, entry.uid, entry.gid);
    chmodSync(path, entry.mode);
    const t = secondsOf(entry.mtimeNs);
    utimesSync(path, t, t);
  }
  for (const { path, entry } of links) {
    for (const part of entry.target.split('/')) checkName(part);
    linkSync(join(dest, entry.target), path);
  }
  runBatched(
    ['/bin/sh', '-c', MKNOD_EACH, 'sh'],
    whiteouts.map((w) => w.path),
    'make whiteouts',
  );
  for (const { path, entry } of whiteouts) {
    chownSync(path, entry.uid, entry.gid);
    chmodSync(path, entry.mode);
    const t = secondsOf(entry.mtimeNs);
    utimesSync(path, t, t);
  }
  const opaque = dirs.filter((d) => d.entry.opaque).map((d) => d.path);
  runBatched(
    ['/usr/bin/setfattr', '-n', 'trusted.overlay.opaque', '-v', 'y', '--'],
    opaque,
    'mark opaque directories',
  );
  for (const { path, entry } of symlinks) {
    symlinkSync(entry.target, path);
    lchownSync(path, entry.uid, entry.gid);
    const t = secondsOf(entry.mtimeNs);
    lutimesSync(path, t, t);
  }
  for (const { path, entry } of dirs.reverse()) {
    chownSync(path, entry.uid, entry.gid);
    chmodSync(path, entry.mode);
    const t = secondsOf(entry.mtimeNs);
    utimesSync(path, t, t);
  }
}

/** Makes each argument a character device 0/0 (an overlayfs whiteout), stopping at the first failure. */
const MKNOD_EACH = 'for p; do /usr/bin/mknod -m 000 -- "$p" c 0 0 || exit 1; done';
/** Bytes of paths given to one program run (well under the kernel's limit on arguments). */
const ARGS_BYTES = 96 * 1024;

/** Runs `argv` with as many of `paths` as fit, until all are done; any failure throws. */
function runBatched(argv: string[], paths: string[], what: string): void {
  for (let i = 0; i < paths.length; ) {
    const chunk: string[] = [];
    for (let bytes = 0; i < paths.length && (chunk.length === 0 || bytes < ARGS_BYTES); i++) {
      chunk.push(paths[i] as string);
      bytes += Buffer.byteLength(paths[i] as string) + 1;
    }
    const r = spawnSync(argv[0] as string, [...argv.slice(1), ...chunk], { encoding: 'utf8' });
    if (r.error || r.status !== 0)
      throw new PaddockError(
        'INTERNAL',
        `Could not ${what} of the root layer (${r.error?.message ?? r.stderr.trim().slice(0, 300)}); mknod and setfattr (the "attr" package) must be installed and Paddock must run as root.`,
      );
  }
}

function prepareDest(dest: string): void {
  try {
    mkdirSync(dest, { mode: 0o700 });
    return;
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
  }
  const st = lstatSync(dest);
  if (!st.isDirectory() || readdirSync(dest).length > 0) {
    throw new PaddockError(
      'FILE_EXISTS',
      `${dest} is not an empty directory: a checkpoint is restored only into an empty or new directory; pick another place or empty it first.`,
    );
  }
  chmodSync(dest, 0o700);
}
