/**
 * Checkpoints of a computer on the Debian test image (test/helpers/images.ts) hold its writable
 * root layer beside /workspace: root inside installs files, deletes one of the image's (a
 * whiteout), replaces a directory of the image (opaque), changes owners and modes; after a
 * checkpoint, more changes and a restore, the whole root file system is again the checkpoint's,
 * file for file and byte for byte. Symlinks root plants toward host paths are kept as text and
 * never followed, and a checkpoint with a root layer is refused on a computer without its image.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { before, describe, it } from 'node:test';
import { type Session, withServer } from '../helpers/computer-server.js';
import { debianProfile, debianTestStore, imageSkipReason } from '../helpers/images.js';
import { pollUntil } from '../helpers/poll.js';
import { storeHolds } from '../unit/computer/checkpoints/tree-fixture.js';
import { codeOf, launchRunning, toolCaller, withComputer } from '../unit/computer/fixture.js';

const skip = imageSkipReason();

/**
 * The computer's root file system as it sees it, except what every launch makes anew (/proc,
 * /dev, /sys, the mounts of /workspace and /tmp, Paddock's own files and generated /etc files):
 * each path with its kind, mode, owners, link count and link text, then each file's digest.
 */
const ROOT_LISTING = [
  'cd / && P="( -path ./proc -o -path ./sys -o -path ./dev -o -path ./workspace -o -path ./tmp -o -path ./opt/paddock',
  '-o -path ./etc/hostname -o -path ./etc/hosts -o -path ./etc/resolv.conf -o -path ./etc/profile -o -path ./etc/paddock.sh )"',
  '&& { find . -xdev $P -prune -o -printf "%p %y %m %U %G %n %l\\n" | sort',
  '&& find . -xdev $P -prune -o -type f -exec md5sum {} + | sort; } > /tmp/listing',
  // the whole listing by digest (thousands of lines), the places the test changes in full
  '&& wc -l < /tmp/listing && md5sum < /tmp/listing',
  '&& grep -E "usr/local|usr/bin/(tac|rev)|doc/apt|etc/motd" /tmp/listing',
].join(' ');

describe('checkpoints of a computer on an image (bwrap)', { concurrency: false, skip }, () => {
  let imagesDir = '';
  before(async () => {
    imagesDir = await debianTestStore();
  });

  it("the root layer — installed files, a deleted image file, a replaced image directory, owners and modes — comes back exactly with /workspace, planted host symlinks are never followed, and another image's computer refuses it", async () => {
    const marker = mkdtempSync(join(tmpdir(), 'paddock-host-'));
    writeFileSync(join(marker, 'secret'), 'HOST SECRET');
    const profiles = [debianProfile('deb', 'root'), { id: 'plain', name: 'plain' }];
    try {
      await withComputer({ imagesDir, computer: { profiles } }, async ({ manager, ctx, dataDir }) => {
        await launchRunning(manager, 'deb');
        const call = toolCaller(manager, ctx);
        const run = async (script: string) => {
          const r = await call('run_command', { script, waitMs: 60_000 });
          assert.equal(r.exitCode, 0, `${script}: ${String(r.stderr)}`);
          return String(r.stdout);
        };
        await run(
          [
            'set -e',
            'mkdir -p /usr/local/lib/pk /usr/local/share/empty',
            'echo v1 > /usr/local/lib/pk/data && chown 33:33 /usr/local/lib/pk/data && chmod 640 /usr/local/lib/pk/data',
            'head -c 300000 /dev/urandom > /usr/local/bin/tool && chmod 755 /usr/local/bin/tool && ln /usr/local/bin/tool /usr/local/bin/tool-too',
            'echo "extra" >> /etc/motd && chmod 600 /etc/motd',
            'rm /usr/bin/tac',
            'rm -rf /usr/share/doc/apt && mkdir /usr/share/doc/apt && echo mine > /usr/share/doc/apt/mine',
            'chown -R 100:65534 /usr/local/share/empty',
            // toward host paths: absolute and climbing
            `ln -s ${marker} /usr/local/evil && ln -s ../../../../../../..${marker}/secret /usr/local/evil-file`,
            'echo ws > /workspace/note',
          ].join('\n'),
        );
        const original = await run(ROOT_LISTING);
        assert.match(original, /\.\/usr\/local\/lib\/pk\/data f 640 33 33 1/);
        assert.doesNotMatch(original, /\.\/usr\/bin\/tac /);

        const first = await call('checkpoint_computer', { label: 'installed' });
        assert.deepEqual(first.layers, ['workspace', 'root']);
        assert.match(String(first.image), /^debian-bookworm-/);
        const listed = await call('list_checkpoints');
        assert.deepEqual((listed.checkpoints as { layers: string[] }[])[0]?.layers, ['workspace', 'root']);
        assert.equal(
          storeHolds(join(dataDir, 'checkpoints'), 'HOST SECRET'),
          false,
          'a checkpoint followed a planted link to the host',
        );

        await run(
          [
            'set -e',
            'rm -rf /usr/local/lib/pk /usr/local/evil',
            'echo changed > /usr/local/bin/tool',
            'cp /bin/cat /usr/bin/tac',
            'rm /usr/bin/rev',
            'mkdir /usr/share/doc/apt/more',
            'chmod 644 /etc/motd',
            'echo later > /workspace/note',
          ].join('\n'),
        );
        assert.notEqual(await run(ROOT_LISTING), original);

        const restored = await call('restore_checkpoint', { checkpointId: first.checkpointId });
        await pollUntil(
          async () => (await call('get_computer_status')).lifecycle === 'running',
          'the restored computer to run',
          60_000,
        );
        // the root layer is there from the first instant; /workspace is copied in after boot
        let seen = '';
        await pollUntil(
          async () => (await run('cat /workspace/note 2>/dev/null || true')) === 'ws\n',
          "the checkpoint's /workspace",
          30_000,
        );
        seen = await run(ROOT_LISTING);
        assert.equal(seen, original);
        assert.equal(await run('ls /usr/share/doc/apt'), 'mine\n');
        assert.equal(await run('test ! -e /usr/bin/tac && readlink /usr/local/evil'), `${marker}\n`);
        assert.deepEqual(readdirSync(marker), ['secret'], 'a restore wrote into a host directory');

        // the state left (savedAs) holds the later root layer: restoring it brings that back
        await call('restore_checkpoint', { checkpointId: restored.savedAs });
        await pollUntil(
          async () => (await call('get_computer_status')).lifecycle === 'running',
          'the computer to run again',
          60_000,
        );
        assert.equal(
          await run('cat /usr/local/bin/tool; test -x /usr/bin/tac && echo tac'),
          'changed\ntac\n',
        );

        // a computer without the image refuses the root layer, before saving anything
        await launchRunning(manager, 'plain');
        const before = (await call('list_checkpoints')).checkpoints as unknown[];
        assert.equal(
          await codeOf(call('restore_checkpoint', { checkpointId: first.checkpointId })),
          'INVALID_ARGUMENT',
        );
        assert.equal(((await call('list_checkpoints')).checkpoints as unknown[]).length, before.length);
      });
    } finally {
      rmSync(marker, { recursive: true, force: true });
    }
  });
});

describe('root layers of named computers (bwrap)', { concurrency: false, skip }, () => {
  let imagesDir = '';
  before(async () => {
    imagesDir = await debianTestStore();
  });

  it('a fork boots with the checkpoint’s root layer, and a named computer booting again after a stop gets its root layer back', async () => {
    const profiles = [debianProfile('deb', 'root')];
    await withServer(
      { profiles },
      async ({ session, service }) => {
        const origin = session('o', 'origin');
        const running = async (call: Session, what: string) =>
          pollUntil(async () => (await call('get_computer_status')).lifecycle === 'running', what, 60_000);
        const out = async (call: Session, script: string) => {
          const r = await call('run_command', { script, waitMs: 30_000 });
          assert.equal(r.exitCode, 0, `${script}: ${String(r.stderr)}`);
          return String(r.stdout);
        };
        await origin('launch_computer', { profileId: 'deb' });
        await running(origin, 'the origin');
        await out(origin, 'echo installed > /usr/local/bin/tool && rm /usr/bin/tac');
        const ck = await origin('checkpoint_computer', {});
        assert.deepEqual(ck.layers, ['workspace', 'root']);

        await origin('fork_computer', { checkpointId: ck.checkpointId, name: 'branch' });
        const branch = session('b', 'branch');
        await running(branch, 'the fork');
        assert.equal(
          await out(branch, 'cat /usr/local/bin/tool; test ! -e /usr/bin/tac && echo gone'),
          'installed\ngone\n',
        );

        // a stop checkpoints the root layer, the next boot lays it back
        await out(branch, 'echo branch-only > /usr/local/bin/later');
        assert.equal(await service.stopComputer('branch'), true);
        const again = await branch('launch_computer', { profileId: 'deb' });
        assert.match(String(again.restoredFrom), /^ck_/);
        await running(branch, 'the fork after its stop');
        assert.equal(
          await out(branch, 'cat /usr/local/bin/later; test ! -e /usr/bin/tac && echo gone'),
          'branch-only\ngone\n',
        );
        // the origin never saw any of it
        assert.equal(await out(origin, 'ls /usr/local/bin'), 'tool\n');
      },
      imagesDir,
    );
  });
});
