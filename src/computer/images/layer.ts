/**
 * One image layer on disk: a verified layer tar unpacked into a directory of its own, in the form
 * overlayfs reads as a lower layer. OCI whiteouts become overlay whiteouts (`.wh.NAME` → a 0/0
 * character device `NAME`; `.wh..wh..opq` → the directory's `trusted.overlay.opaque` attribute),
 * device nodes, sockets and extended attributes of the archive are dropped, and every owner is
 * shifted into the image id range (ids.ts; a shift clears setuid bits too).
 *
 * Each layer is unpacked into an empty directory, never over another layer, so a symbolic link
 * that one layer plants cannot redirect the files of the next: links are only ever followed by
 * the kernel inside a computer. Within one archive GNU tar creates links that point outside it
 * (absolute, or with `..`) only after every file is in place.
 */
import { execFile } from 'node:child_process';
import { lchownSync, lstatSync, mkdirSync, readdirSync, rmSync, unlinkSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { hostIdOf, type ImageIdBase } from './ids.js';

const run = promisify(execFile);

/** How a layer blob is compressed. */
export type LayerCompression = 'none' | 'gzip' | 'zstd';

/** What unpacking a layer found. */
export interface UnpackedLayer {
  files: number;
  bytes: number;
  whiteouts: number;
}

const WHITEOUT = '.wh.';
const OPAQUE = '.wh..wh..opq';

/** Unpacks `tarFile` into `dir` (which must not exist). Throws with tar's own words on a bad archive. */
export async function unpackLayer(
  tarFile: string,
  compression: LayerCompression,
  dir: string,
  ids: ImageIdBase,
): Promise<UnpackedLayer> {
  mkdirSync(dir, { mode: 0o755 });
  const flag = compression === 'gzip' ? ['-z'] : compression === 'zstd' ? ['--zstd'] : [];
  await run(
    'tar',
    [
      '-x',
      ...flag,
      '--numeric-owner',
      '--same-owner',
      '-p',
      '--no-xattrs',
      '--no-acls',
      '-C',
      dir,
      '-f',
      tarFile,
    ],
    { maxBuffer: 4 * 1024 * 1024 },
  );
  const found: UnpackedLayer = { files: 0, bytes: 0, whiteouts: 0 };
  await settle(dir, ids, found, new Set());
  lchownSync(dir, hostIdOf(0, ids), hostIdOf(0, ids));
  return found;
}

/** Converts whiteouts, drops special files and shifts owners under `dir`, never following a link. */
async function settle(
  dir: string,
  ids: ImageIdBase,
  found: UnpackedLayer,
  shifted: Set<number>,
): Promise<void> {
  const names = readdirSync(dir);
  for (const name of names) {
    const path = join(dir, name);
    if (name === OPAQUE) {
      unlinkSync(path);
      await run('setfattr', ['-n', 'trusted.overlay.opaque', '-v', 'y', dir]);
      found.whiteouts++;
      continue;
    }
    if (name.startsWith(WHITEOUT)) {
      unlinkSync(path);
      const hidden = name.slice(WHITEOUT.length);
      if (hidden && hidden !== '.' && hidden !== '..' && !hidden.startsWith(WHITEOUT)) {
        rmSync(join(dir, hidden), { recursive: true, force: true });
        await run('mknod', ['-m', '000', join(dir, hidden), 'c', '0', '0']);
        found.whiteouts++;
      }
      continue;
    }
    const s = lstatSync(path);
    if (s.isBlockDevice() || s.isCharacterDevice() || s.isSocket()) {
      // whiteouts of this layer are made above; any other device is never part of an image
      if (!names.includes(`${WHITEOUT}${name}`)) unlinkSync(path);
      continue;
    }
    // a hard link's inode is shifted once
    if (!shifted.has(s.ino)) {
      shifted.add(s.ino);
      lchownSync(path, hostIdOf(s.uid, ids), hostIdOf(s.gid, ids));
      found.files++;
      if (s.isFile()) found.bytes += s.size;
    }
    if (s.isDirectory()) await settle(path, ids, found, shifted);
  }
}
