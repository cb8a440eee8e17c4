/**
 * A computer's disk: one sparse ext4 image file of exactly the profile's `diskMb`, holding
 * `workspace/` and `tmp/` (and, later, any other writable layer of the computer, e.g. an
 * overlay's `upper/` and `work/`), so every byte a job writes counts against one limit and a
 * full disk answers ENOSPC inside the computer while the host's file system keeps the rest.
 *
 * The image is made here on the host (mkfs.ext4, lazy init: a few MiB of metadata, ~10 ms) and
 * loop-mounted only inside the launch's own mount namespace (see launch-namespace.ts): the
 * mount and its loop device (auto-clear) go away with the sandbox's last process, whatever way
 * the server ends. Needs root, loop devices and ext4; `diskImageSupport` says whether this host
 * has them.
 */
import { execFile, execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import {
  accessSync,
  chmodSync,
  chownSync,
  closeSync,
  constants,
  existsSync,
  ftruncateSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
} from 'node:fs';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { sleep } from '../../../shared/abort.js';
import { PaddockError } from '../../../shared/errors.js';
import type { Logger } from '../../../shared/logger.js';
import type { SandboxRoot } from './sandbox-root.js';

const run = promisify(execFile);
const MIB = 1024 * 1024;
const E2FS_DIRS = ['/usr/sbin', '/sbin'];

/** The image of a kept workspace inside its directory. */
export const DISK_IMAGE = 'disk.img';
/** Blank disks made ahead in the computers directory (`disk-spare-<hex>.img`). */
export const DISK_SPARE_PATTERN = /^disk-spare-[0-9a-f]{12}\.img$/;

/** Whether per-computer disk images can be used here, and why not. */
export type DiskSupport = { ok: true } | { ok: false; reason: string };

/** Finds an e2fsprogs program (mkfs.ext4, e2fsck, resize2fs). */
function e2fs(name: string): string | null {
  for (const dir of E2FS_DIRS) {
    try {
      accessSync(join(dir, name), constants.X_OK);
      return join(dir, name);
    } catch {
      // next
    }
  }
  return null;
}

/** Whether this process can make and loop-mount ext4 images (root, loop devices, ext4, e2fsprogs). */
export function diskImageSupport(): DiskSupport {
  if (process.getuid?.() !== 0) return { ok: false, reason: 'Paddock does not run as root' };
  if (!existsSync('/dev/loop-control')) return { ok: false, reason: 'this host has no loop devices' };
  if (!e2fs('mkfs.ext4'))
    return { ok: false, reason: 'mkfs.ext4 is missing (install the "e2fsprogs" package)' };
  try {
    if (!/\bext4$/m.test(readFileSync('/proc/filesystems', 'utf8')))
      return { ok: false, reason: 'the kernel has no ext4 file system' };
  } catch {
    return { ok: false, reason: '/proc/filesystems cannot be read' };
  }
  return { ok: true };
}

/** Creates `path` as an empty image of `sizeMb` MiB (sparse; fails if it exists). */
function sparseFile(path: string, sizeMb: number): void {
  const fd = openSync(path, 'wx', 0o600);
  try {
    ftruncateSync(fd, sizeMb * MIB);
  } finally {
    closeSync(fd);
  }
}

async function mkfs(image: string, seedDir: string): Promise<void> {
  const program = e2fs('mkfs.ext4') ?? 'mkfs.ext4';
  // lazy init: inode tables and the journal stay holes until used (no ext4lazyinit writes either:
  // the mount says noinit_itable); -m 0: no blocks are kept for host root inside the computer
  await run(program, [
    '-q',
    '-F',
    '-m',
    '0',
    '-L',
    'paddock',
    '-E',
    'lazy_itable_init=1,lazy_journal_init=1',
    '-d',
    seedDir,
    image,
  ]);
}

/**
 * Makes a fresh disk for one generation at `image` (its directory must exist), starting from
 * the root's seed (an empty `workspace/` and `tmp/`).
 */
export async function makeDiskImage(image: string, sizeMb: number, root: SandboxRoot): Promise<void> {
  try {
    sparseFile(image, sizeMb);
    await mkfs(image, root.seed);
  } catch (e) {
    rmSync(image, { force: true });
    throw diskError(e, `make the computer's ${sizeMb} MiB disk`);
  }
}

/**
 * Blank disks made ahead, one per (directory, size), so a cold launch renames one into place
 * instead of waiting for mkfs: the first launch of a size makes its disk itself and starts the
 * next one, each later one takes the spare and starts another. `dispose` removes them.
 */
export class DiskSpares {
  private readonly spares = new Map<string, Promise<string | null>>();

  constructor(
    private readonly root: () => SandboxRoot,
    private readonly logger: Logger,
  ) {}

  /** Puts a blank disk of `sizeMb` at `image` (`<dir>/<generation>/disk.img`); spares go in `<dir>`. */
  async make(image: string, sizeMb: number): Promise<void> {
    const dir = dirname(dirname(image));
    const key = `${sizeMb}:${dir}`;
    const spare = this.spares.get(key);
    this.spares.delete(key);
    const ready = spare ? await spare : null;
    let placed = false;
    if (ready) {
      try {
        renameSync(ready, image);
        placed = true;
      } catch {
        rmSync(ready, { force: true });
      }
    }
    if (!placed) await makeDiskImage(image, sizeMb, this.root());
    if (!this.spares.has(key)) this.spares.set(key, this.makeSpare(dir, sizeMb));
  }

  private async makeSpare(dir: string, sizeMb: number): Promise<string | null> {
    const path = join(dir, `disk-spare-${randomBytes(6).toString('hex')}.img`);
    try {
      await makeDiskImage(path, sizeMb, this.root());
      return path;
    } catch (e) {
      this.logger.warn('computer.disk_spare_failed', { dir, sizeMb, error: (e as Error).message });
      return null;
    }
  }

  /** Removes every spare (those still being made once they are). */
  async dispose(): Promise<void> {
    const pending = [...this.spares.values()];
    this.spares.clear();
    for (const path of await Promise.all(pending)) if (path) rmSync(path, { force: true });
  }
}

/**
 * The kept disk in `dir` (`dir/disk.img`), made on first use, resized when the profile's
 * `diskMb` changed, and never mounted twice: waits until no loop device still holds it (the
 * previous generation's goes once its last process is gone). A `workspace/` directory left in
 * `dir` by a server without disk images becomes the disk's workspace.
 */
export async function prepareKeptImage(
  dir: string,
  sizeMb: number,
  root: SandboxRoot,
  logger: Logger,
): Promise<string> {
  const image = join(dir, DISK_IMAGE);
  if (existsSync(image)) {
    await waitReleased(image, 10_000);
    const bytes = statSync(image).size;
    if (bytes !== sizeMb * MIB) await resize(image, bytes, sizeMb, logger);
    return image;
  }
  const plain = join(dir, 'workspace');
  if (!existsSync(plain)) {
    await makeDiskImage(image, sizeMb, root);
    return image;
  }
  // a plain kept workspace moves into the new disk (the disk's seed is the directory itself)
  const seed = join(dir, '.disk-seed');
  rmSync(seed, { recursive: true, force: true });
  mkdirSync(seed, { mode: 0o700 });
  renameSync(plain, join(seed, 'workspace'));
  const tmpDir = join(seed, 'tmp');
  const model = statSync(join(root.seed, 'tmp'));
  mkdirSync(tmpDir);
  chownSync(tmpDir, model.uid, model.gid);
  chmodSync(tmpDir, 0o1777);
  try {
    sparseFile(image, sizeMb);
    await mkfs(image, seed);
    logger.info('computer.disk_migrated', { dir, sizeMb });
  } catch (e) {
    rmSync(image, { force: true });
    renameSync(join(seed, 'workspace'), plain);
    rmSync(seed, { recursive: true, force: true });
    throw diskError(
      e,
      `move the kept workspace ${plain} into a ${sizeMb} MiB disk (it may hold more than the profile's diskMb: raise the limit or remove files)`,
    );
  }
  // its files are in the disk now
  rmSync(seed, { recursive: true, force: true });
  return image;
}

/** Grows or shrinks a kept disk to `sizeMb` (shrinking fails when its files do not fit). */
async function resize(image: string, bytes: number, sizeMb: number, logger: Logger): Promise<void> {
  const check = e2fs('e2fsck') ?? 'e2fsck';
  const resize2fs = e2fs('resize2fs') ?? 'resize2fs';
  try {
    // -p repairs what is safe; exit 1 means it did, which is fine
    await run(check, ['-f', '-p', image]).catch((e: { code?: number }) => {
      if (e.code !== 1) throw e;
    });
    if (sizeMb * MIB > bytes) {
      const fd = openSync(image, 'r+');
      try {
        ftruncateSync(fd, sizeMb * MIB);
      } finally {
        closeSync(fd);
      }
      await run(resize2fs, [image]);
    } else {
      await run(resize2fs, [image, `${sizeMb}M`]);
      const fd = openSync(image, 'r+');
      try {
        ftruncateSync(fd, sizeMb * MIB);
      } finally {
        closeSync(fd);
      }
    }
    logger.info('computer.disk_resized', { image, fromMb: Math.round(bytes / MIB), toMb: sizeMb });
  } catch (e) {
    throw diskError(
      e,
      `resize the kept disk ${image} from ${Math.round(bytes / MIB)} MiB to ${sizeMb} MiB (its files may not fit: remove some, or raise the profile's diskMb back)`,
    );
  }
}

/** Loop devices of this host and the file behind each (`/sys/block/loopN/loop/backing_file`). */
export function loopDevices(): { device: string; file: string }[] {
  let names: string[];
  try {
    names = readdirSync('/sys/block').filter((n) => /^loop\d+$/.test(n));
  } catch {
    return [];
  }
  return names.flatMap((name) => {
    try {
      const file = readFileSync(`/sys/block/${name}/loop/backing_file`, 'utf8').trim();
      return [{ device: `/dev/${name}`, file: file.replace(/ \(deleted\)$/, '') }];
    } catch {
      return []; // not attached
    }
  });
}

/** Waits until no loop device is backed by `image`; throws when one still is at the deadline. */
async function waitReleased(image: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (loopDevices().some((d) => d.file === image)) {
    if (Date.now() > deadline)
      throw new PaddockError(
        'NOT_RUNNING',
        `The kept disk ${image} is still in use by a computer that is stopping; launch again in a few seconds.`,
      );
    await sleep(20);
  }
}

/**
 * Detaches the loop devices of images under `dirs` (a crashed server's): a busy one is only
 * marked to go when its last user does. Returns the devices handled.
 */
export function detachLoopDevices(dirs: string[], logger: Logger): string[] {
  const losetup = ['/usr/sbin/losetup', '/sbin/losetup'].find((p) => existsSync(p));
  const mine = loopDevices().filter((d) => dirs.some((dir) => d.file.startsWith(`${dir}/`)));
  for (const d of mine) {
    try {
      if (losetup) execFileSync(losetup, ['-d', d.device], { stdio: 'pipe' });
      logger.info('computer.loop_swept', { device: d.device, file: d.file });
    } catch (e) {
      logger.warn('computer.loop_leftover', { device: d.device, error: (e as Error).message });
    }
  }
  return mine.map((d) => d.device);
}

function diskError(e: unknown, what: string): PaddockError {
  if (e instanceof PaddockError) return e;
  const err = e as NodeJS.ErrnoException & { stderr?: string };
  const detail = (err.stderr?.trim() || err.message).slice(0, 300);
  if (err.code === 'ENOSPC')
    return new PaddockError(
      'LIMIT_EXCEEDED',
      `Could not ${what}: the host's disk is full; free space on the host and launch again.`,
    );
  return new PaddockError(
    'INTERNAL',
    `Could not ${what}: ${detail}. Launch again; if it keeps failing, run "paddock doctor".`,
  );
}
