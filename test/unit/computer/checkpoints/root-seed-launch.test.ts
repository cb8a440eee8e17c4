/**
 * The launch shell lays a restored root layer (a seed) onto a real ext4 disk before it mounts the
 * overlay: owners, modes, hard links, whiteouts and the opaque attribute arrive on the disk, the
 * overlay shows the seed's system over the lower directory, and a disk that already has a root
 * layer refuses a seed (a mounted or kept layer is never overwritten). Runs the real script as
 * root, in a mount namespace of its own; the command after it inspects the result there.
 */
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { chownSync, existsSync, linkSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import {
  LAUNCH_EXIT,
  launchNamespacePrefix,
} from '../../../../src/computer/backend/bwrap/launch-namespace.js';

const ROOT_ID = 640_000_000;

function skipReason(): string | false {
  if (process.getuid?.() !== 0) return 'the launch shell runs as root';
  for (const tool of ['/usr/sbin/mkfs.ext4', '/usr/bin/setfattr', '/usr/bin/getfattr', '/usr/bin/unshare'])
    if (!existsSync(tool) && !existsSync(tool.replace('/usr/sbin', '/sbin'))) return `${tool} is missing`;
  return false;
}

/** A fresh 32 MiB ext4 disk with empty workspace/ and tmp/, as the backend makes them. */
function makeDisk(dir: string): string {
  const seed = join(dir, 'disk-seed');
  mkdirSync(join(seed, 'workspace'), { recursive: true });
  mkdirSync(join(seed, 'tmp'));
  const image = join(dir, 'disk.img');
  execFileSync('truncate', ['-s', '32M', image]);
  execFileSync('mkfs.ext4', ['-q', '-F', '-d', seed, image]);
  return image;
}

/** Runs the launch prefix for one disk and one overlay, then `inspect` inside its namespace. */
function launch(dir: string, image: string, lower: string, seed: string | undefined, inspect: string) {
  const launchDir = join(dir, 'launch');
  for (const d of ['disk', 'root']) mkdirSync(join(launchDir, d), { recursive: true });
  const prefix = launchNamespacePrefix(launchDir, 64_000, [
    { kind: 'disk', image, target: join(launchDir, 'disk'), freshTmp: false },
    {
      kind: 'overlay',
      lowerDirs: [lower],
      target: join(launchDir, 'root'),
      rootId: ROOT_ID,
      ...(seed ? { seed } : {}),
    },
  ]);
  return spawnSync(
    prefix[0] as string,
    [...prefix.slice(1), '/bin/sh', '-c', inspect, 'inspect', launchDir],
    {
      encoding: 'utf8',
    },
  );
}

describe('a restored root layer at launch', { skip: skipReason() }, () => {
  it('is copied onto the fresh disk with owners, modes, hard links, whiteouts and opaque marks before the overlay shows it, and a disk that has a root layer refuses one', () => {
    const dir = mkdtempSync(join(tmpdir(), 'paddock-seed-'));
    try {
      const lower = join(dir, 'lower');
      mkdirSync(join(lower, 'etc/app'), { recursive: true });
      mkdirSync(join(lower, 'usr/bin'), { recursive: true });
      writeFileSync(join(lower, 'etc/app/old.conf'), 'image');
      writeFileSync(join(lower, 'usr/bin/gone'), 'image');
      const seed = join(dir, 'seed');
      mkdirSync(join(seed, 'etc/app'), { recursive: true });
      mkdirSync(join(seed, 'usr/bin'), { recursive: true });
      writeFileSync(join(seed, 'etc/app/new.conf'), 'restored');
      chownSync(join(seed, 'etc/app/new.conf'), ROOT_ID + 33, ROOT_ID + 33);
      linkSync(join(seed, 'etc/app/new.conf'), join(seed, 'etc/app/same.conf'));
      execFileSync('setfattr', ['-n', 'trusted.overlay.opaque', '-v', 'y', join(seed, 'etc/app')]);
      execFileSync('mknod', ['-m', '000', join(seed, 'usr/bin/gone'), 'c', '0', '0']);
      chownSync(seed, ROOT_ID, ROOT_ID);
      const image = makeDisk(dir);
      const inspect = [
        'cd "$1/root" && find . -printf "%p %y %m %U %G %n\\n" | sort',
        'echo "--"; getfattr --only-values -n trusted.overlay.opaque "$1/disk/root/upper/etc/app"',
        'echo; stat -c "%F %t:%T" "$1/disk/root/upper/usr/bin/gone"',
      ].join('; ');
      const r = launch(dir, image, lower, seed, inspect);
      assert.equal(r.status, 0, r.stderr);
      assert.equal(
        r.stdout,
        [
          // overlayfs counts one link for a merged directory; the opaque etc/app is not merged
          '. d 755 640000000 640000000 1',
          './etc d 755 0 0 1',
          './etc/app d 755 0 0 2',
          './etc/app/new.conf f 644 640000033 640000033 2',
          './etc/app/same.conf f 644 640000033 640000033 2',
          './usr d 755 0 0 1',
          './usr/bin d 755 0 0 1',
          '--',
          'y',
          'character special file 0:0',
          '',
        ].join('\n'),
      );
      // the disk now has a root layer: a second seed is refused, nothing mounted over it
      const again = launch(dir, image, lower, seed, 'echo ran');
      assert.equal(again.status, LAUNCH_EXIT.overlay);
      assert.match(again.stderr, /fresh disk/);
      assert.equal(again.stdout, '');
      // and without a seed the layer left on the disk is what the overlay shows
      const kept = launch(
        dir,
        image,
        lower,
        undefined,
        'cat "$1/root/etc/app/new.conf"; ls "$1/root/usr/bin" | wc -l',
      );
      assert.equal(kept.stdout, 'restored0\n');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
