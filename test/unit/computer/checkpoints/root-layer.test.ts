/**
 * Checkpoints of a root layer (an overlayfs upper directory) on real files: whiteouts (devices
 * 0/0, linked to one inode as overlayfs makes them), opaque directories, owners of the image's
 * shifted range, setuid bits, hard links and symlinks come back exactly, and the restored layer
 * mounted over the same lower directory shows the same system as the original (the mounts are
 * made in a mount namespace of their own, by `unshare`). Needs root, overlayfs and the attr tools.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import {
  chmodSync,
  chownSync,
  linkSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { PaddockError } from '../../../../src/shared/errors.js';
import { describeLayer, opaqueOf, skipReason } from './layer-fixture.js';
import { scratch, startSwapper, stop, storeHolds } from './tree-fixture.js';

const IMAGE = { name: 'test-image', layers: ['top', 'abc'] };
const ROOT_ID = 640_000_000;

/** What an overlay of `upper` over `lower` shows (names, kinds, modes, owners, contents), mounted privately. */
function mergedView(lower: string, upper: string, work: string, at: string): string {
  mkdirSync(work, { recursive: true });
  mkdirSync(at, { recursive: true });
  const script =
    'mount -n -t overlay -o "lowerdir=$1,upperdir=$2,workdir=$3,redirect_dir=off,metacopy=off" overlay "$4" && ' +
    'cd "$4" && find . -printf "%p %y %m %U %G %l\\n" | sort && find . -type f -exec sha256sum {} + | sort';
  return execFileSync(
    'unshare',
    ['--mount', '--propagation', 'private', 'sh', '-c', script, 'sh', lower, upper, work, at],
    {
      encoding: 'utf8',
    },
  );
}

/** A lower directory (the "image") and an upper layer over it with every kind of change. */
function buildLayers(dir: string): { lower: string; upper: string } {
  const lower = join(dir, 'lower');
  const upper = join(dir, 'upper');
  for (const d of ['usr/bin', 'etc/app', 'opt/tool/lib', 'var/cache'])
    mkdirSync(join(lower, d), { recursive: true });
  writeFileSync(join(lower, 'usr/bin/old'), 'image program');
  writeFileSync(join(lower, 'etc/app/a.conf'), 'image a');
  writeFileSync(join(lower, 'etc/app/b.conf'), 'image b');
  writeFileSync(join(lower, 'opt/tool/lib/x.so'), 'image lib');
  writeFileSync(join(lower, 'etc/motd'), 'image motd');
  // the upper layer, as overlayfs and a job as root would leave it
  for (const d of ['usr/local/bin', 'etc/app', 'opt/tool', 'usr/bin', 'empty'])
    mkdirSync(join(upper, d), { recursive: true });
  writeFileSync(join(upper, 'usr/local/bin/new'), '#!/bin/sh\necho new\n');
  writeFileSync(join(upper, 'usr/local/bin/big'), Buffer.alloc(300_000, 7));
  chmodSync(join(upper, 'usr/local/bin/new'), 0o4755);
  linkSync(join(upper, 'usr/local/bin/new'), join(upper, 'usr/local/bin/new-again'));
  writeFileSync(join(upper, 'etc/app/a.conf'), 'changed a');
  chownSync(join(upper, 'etc/app/a.conf'), ROOT_ID + 33, ROOT_ID + 33);
  // replaced directory: opaque, holding only its new entry
  writeFileSync(join(upper, 'opt/tool/only'), 'new tool');
  execFileSync('setfattr', ['-n', 'trusted.overlay.opaque', '-v', 'y', join(upper, 'opt/tool')]);
  // deleted image files: whiteouts, two names of one inode as overlayfs shares them
  execFileSync('mknod', ['-m', '000', join(upper, 'usr/bin/old'), 'c', '0', '0']);
  linkSync(join(upper, 'usr/bin/old'), join(upper, 'etc/motd'));
  execFileSync('mknod', ['-m', '000', join(upper, 'etc/app/b.conf'), 'c', '0', '0']);
  symlinkSync('/etc/shadow', join(upper, 'usr/local/bin/host-link'));
  symlinkSync('../../../../../../..', join(upper, 'usr/local/up'));
  for (const p of [
    '',
    'usr',
    'usr/local',
    'usr/local/bin',
    'etc',
    'etc/app',
    'opt',
    'opt/tool',
    'usr/bin',
    'empty',
  ])
    chownSync(join(upper, p), ROOT_ID, ROOT_ID);
  chmodSync(join(upper, 'empty'), 0o1777);
  return { lower, upper };
}

describe('checkpoints of a root layer', { skip: skipReason() }, () => {
  it('whiteouts, opaque directories, owners, setuid bits, hard links and symlinks of an upper layer come back exactly, and the restored layer shows the same system over the image', async () => {
    const { dir, store, cleanup } = scratch();
    try {
      const { lower, upper } = buildLayers(dir);
      const ws = join(dir, 'ws');
      mkdirSync(ws);
      writeFileSync(join(ws, 'note'), 'workspace');
      const before = describeLayer(upper);
      const view = mergedView(lower, upper, join(dir, 'w1'), join(dir, 'm1'));
      assert.doesNotMatch(
        view,
        /\.\/usr\/bin\/old|b\.conf|x\.so|motd/,
        'the hand-made layer hides what it should',
      );

      const info = await store.create('box', ws, { rootLayer: { path: upper, image: IMAGE } });
      assert.deepEqual(info.layers, ['workspace', 'root']);
      assert.equal(info.image, IMAGE.name);
      assert.deepEqual((await store.list('box'))[0]?.layers, ['workspace', 'root']);

      const restored = join(dir, 'restored');
      await store.restore('box', info.id, restored, { layer: 'root' });
      assert.deepEqual(describeLayer(restored), before);
      assert.equal(mergedView(lower, restored, join(dir, 'w2'), join(dir, 'm2')), view);
      // the workspace of the same checkpoint is still restored by the three-argument call
      await store.restore('box', info.id, join(dir, 'ws-back'));
      assert.equal(readFileSync(join(dir, 'ws-back', 'note'), 'utf8'), 'workspace');

      // a second checkpoint reuses the unchanged files and keeps the layer after a collection
      writeFileSync(join(upper, 'usr/local/bin/more'), 'more');
      const second = await store.create('box', ws, { rootLayer: { path: upper, image: IMAGE } });
      // the new file and the trees of the four directories above it, not the 300 kB file again
      assert.ok(second.addedBytes < 10_000, `second checkpoint added ${second.addedBytes} bytes`);
      await store.remove('box', info.id);
      const again = join(dir, 'again');
      await store.restore('box', second.id, again, { layer: 'root' });
      assert.deepEqual(describeLayer(again), describeLayer(upper));
    } finally {
      cleanup();
    }
  });

  it('a workspace-only checkpoint answers a root restore with INVALID_ARGUMENT, and keeps skipping devices', async () => {
    const { dir, store, cleanup } = scratch();
    try {
      const ws = join(dir, 'ws');
      mkdirSync(ws);
      execFileSync('mknod', ['-m', '000', join(ws, 'dev'), 'c', '0', '0']);
      const info = await store.create('box', ws);
      assert.deepEqual(info.layers, ['workspace']);
      assert.equal(info.skipped, 1);
      await assert.rejects(store.restore('box', info.id, join(dir, 'r'), { layer: 'root' }), (e: unknown) => {
        return e instanceof PaddockError && e.code === 'INVALID_ARGUMENT';
      });
    } finally {
      cleanup();
    }
  });

  it('symlinks planted in a root layer, and directories swapped for them during the walk, never make the snapshot or the restore reach the host', async () => {
    const { dir, store, cleanup } = scratch();
    const outside = join(dir, 'outside');
    mkdirSync(join(outside, 'sub'), { recursive: true });
    writeFileSync(join(outside, 'f'), 'HOST SECRET');
    writeFileSync(join(outside, 'sub', 'g'), 'HOST SECRET');
    execFileSync('setfattr', ['-n', 'trusted.overlay.opaque', '-v', 'y', outside]);
    const upper = join(dir, 'upper');
    mkdirSync(join(upper, 'd'), { recursive: true });
    for (let i = 0; i < 20; i++) writeFileSync(join(upper, 'd', `f${i}`), `inside ${i}`);
    writeFileSync(join(upper, 'x'), 'inside x');
    symlinkSync(outside, join(upper, 'abs'));
    symlinkSync('../outside', join(upper, 'rel'));
    const swapper = startSwapper(upper, outside);
    const ws = join(dir, 'ws');
    mkdirSync(ws);
    try {
      const ids: string[] = [];
      for (let i = 0; i < 20; i++) {
        try {
          ids.push((await store.create('box', ws, { rootLayer: { path: upper, image: IMAGE } })).id);
        } catch (e) {
          if (!(e instanceof PaddockError && e.code === 'TIMEOUT')) throw e;
        }
      }
      await stop(swapper);
      assert.ok(ids.length > 0, 'every checkpoint was refused');
      assert.equal(storeHolds(join(dir, 'data'), 'HOST SECRET'), false, 'the store copied a host file');
      const outsideBefore = readdirSync(outside).sort();
      for (const [i, id] of ids.entries()) {
        const dest = join(dir, `r${i}`);
        await store.restore('box', id, dest, { layer: 'root' });
        assert.equal(readlinkSync(join(dest, 'abs')), outside);
        assert.equal(readlinkSync(join(dest, 'rel')), '../outside');
        assert.equal(opaqueOf(dest), '', 'the opaque mark of a directory outside was taken');
        for (const name of readdirSync(dest)) {
          const st = lstatSync(join(dest, name));
          if (st.isDirectory()) {
            assert.equal(opaqueOf(join(dest, name)), '', `${name} was marked opaque from outside`);
            for (const f of readdirSync(join(dest, name)))
              assert.match(readFileSync(join(dest, name, f), 'utf8'), /^inside/);
          } else if (st.isFile()) assert.match(readFileSync(join(dest, name), 'utf8'), /^inside/);
        }
      }
      assert.deepEqual(readdirSync(outside).sort(), outsideBefore, 'a restore wrote outside its directory');
    } finally {
      await stop(swapper);
      cleanup();
    }
  });
});
