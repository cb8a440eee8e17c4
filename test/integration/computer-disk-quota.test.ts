/**
 * The disk limit of a computer with real bwrap sandboxes: every place a job can write
 * (/workspace, its home, /tmp) shares one disk of the profile's `diskMb`; a job that fills it
 * gets ENOSPC, write_file answers LIMIT_EXCEEDED, the host gives the computer no more than its
 * limit, and nothing of the disk (image, loop device, mount) outlives the computer. Kept
 * workspaces are bounded the same way. Needs Paddock as root (loop devices); the fallback
 * without disks is tested here too.
 */
import assert from 'node:assert/strict';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { BwrapBackend } from '../../src/computer/backend/bwrap/backend.js';
import { diskImageSupport, loopDevices } from '../../src/computer/backend/bwrap/disk-image.js';
import type { ComputerManager } from '../../src/computer/manager.js';
import { ComputerService } from '../../src/computer/service.js';
import { computerSchema } from '../../src/config/computer-schema.js';
import { PaddockError } from '../../src/shared/errors.js';
import { silentLogger } from '../../src/shared/logger.js';
import { startServe, tempProject } from '../helpers/paddock-process.js';
import { pollUntil } from '../helpers/poll.js';
import { codeOf, launchRunning, runUntilExit, toolCaller, withComputer } from '../unit/computer/fixture.js';

const MIB = 1024 * 1024;
const SMALL = { id: 'small', name: 'Small', requires: ['bash'], limits: { diskMb: 16 } };
const support = diskImageSupport();
const skipReason = support.ok ? false : `no disk images here: ${support.reason}`;

/** Loop devices backed by a file under `dir`. */
function loopsUnder(dir: string) {
  return loopDevices().filter((d) => d.file.startsWith(`${dir}/`));
}

/** Lines of every process's mount table that mention `text`. */
function mountsMentioning(text: string): string[] {
  const found: string[] = [];
  for (const pid of readdirSync('/proc').filter((p) => /^\d+$/.test(p))) {
    try {
      for (const line of readFileSync(`/proc/${pid}/mountinfo`, 'utf8').split('\n'))
        if (line.includes(text)) found.push(`${pid}: ${line}`);
    } catch {
      // gone, or not ours to read
    }
  }
  return found;
}

/** Writes 32 MiB into `path` and prints `<exit status> <error>`. */
const overfill = (path: string) =>
  `mkdir -p "$(dirname ${path})"; msg=$(head -c ${32 * MIB} /dev/zero 2>&1 >${path}); echo "${path} $? $msg"; rm -f ${path}`;

describe('computer disk limit (bwrap)', { concurrency: false, skip: skipReason }, () => {
  it('a job that writes past diskMb in /workspace, its home or /tmp gets ENOSPC, all three share the one limit, and the host gives the computer no more than diskMb', async () => {
    await withComputer({ computer: { profiles: [SMALL] } }, async ({ manager, dataDir }) => {
      const c = await launchRunning(manager, 'small');
      const r = await runUntilExit(
        manager,
        [
          overfill('/workspace/fill'),
          overfill('"$HOME/.cache/fill"'),
          overfill('/tmp/fill'),
          overfill('/var/tmp/fill'),
          // the places share one disk: 9 MiB in the workspace leave no room for 9 MiB in /tmp
          `head -c ${9 * MIB} /dev/zero > /workspace/nine && echo nine-ok`,
          `msg=$(head -c ${9 * MIB} /dev/zero 2>&1 >/tmp/nine); echo "shared $? $msg"`,
          'df -m /workspace /tmp | tail -2',
        ].join('\n'),
      );
      const lines = r.stdout.trim().split('\n');
      for (const place of ['/workspace/fill', '/.cache/fill', '/tmp/fill', '/var/tmp/fill']) {
        const line = lines.find((l) => l.includes(place));
        assert.match(line ?? '', /^\S+ 1 .*No space left on device/, `${place}: ${r.stdout}`);
      }
      assert.ok(lines.includes('nine-ok'), r.stdout);
      assert.match(lines.find((l) => l.startsWith('shared')) ?? '', /^shared 1 .*No space left on device/);
      for (const df of lines.slice(-2)) {
        const sizeMb = Number(df.split(/\s+/)[1]);
        assert.ok(sizeMb > 0 && sizeMb <= 16, `a disk of ${sizeMb} MiB: ${df}`);
      }
      // on the host, the computer is one sparse file of exactly diskMb, never more
      const hostDir = join(dataDir, 'computers', `g${c.generation}`);
      assert.deepEqual(readdirSync(hostDir), ['disk.img']);
      const image = statSync(join(hostDir, 'disk.img'));
      assert.equal(image.size, 16 * MIB);
      assert.ok(image.blocks * 512 <= 16 * MIB, `the image takes ${image.blocks * 512} bytes`);
      assert.equal(image.mode & 0o077, 0, 'the image is closed to other accounts');
    });
  });

  it('write_file on a full disk answers LIMIT_EXCEEDED naming the disk limit and leaves no file, partial or temporary', async () => {
    await withComputer({ computer: { profiles: [SMALL] } }, async ({ manager, ctx }) => {
      const call = toolCaller(manager, ctx);
      await launchRunning(manager, 'small');
      await runUntilExit(manager, `head -c ${32 * MIB} /dev/zero > /workspace/fill 2>/dev/null; true`);
      const content = 'x'.repeat(64 * 1024);
      for (const overwrite of [true, false]) {
        const e = await call('write_file', { path: '/workspace/new.txt', content, overwrite }).catch(
          (err: unknown) => err,
        );
        assert.ok(e instanceof PaddockError, String(e));
        assert.equal(e.code, 'LIMIT_EXCEEDED', e.message);
        assert.match(e.message, /disk limit/);
      }
      const listed = await runUntilExit(manager, 'ls -A /workspace');
      assert.equal(listed.stdout, 'fill\n', 'nothing but the filler is left');
      // with room again, the same write goes through
      await runUntilExit(manager, 'rm /workspace/fill');
      assert.equal(await codeOf(call('write_file', { path: '/workspace/new.txt', content })), 'ok');
    });
  });

  it('the disk goes with its computer: after a relaunch and a stop no image, loop device or mount of it is left', async () => {
    await withComputer({ computer: { profiles: [SMALL] } }, async ({ manager, dataDir }) => {
      const first = await launchRunning(manager, 'small');
      await runUntilExit(manager, 'echo one > /workspace/a');
      assert.equal(loopsUnder(dataDir).length, 1, 'the running computer has its loop device');
      const firstDir = join(dataDir, 'computers', `g${first.generation}`);
      const second = await launchRunning(manager, 'small');
      assert.equal((await runUntilExit(manager, 'ls -A /workspace')).stdout, '', 'a fresh disk');
      await pollUntil(() => loopsUnder(dataDir).length === 1, 'the first disk to go', 10_000);
      assert.equal(existsSync(firstDir), false, 'the first generation’s directory is gone');
      await manager.stop(new PaddockError('NOT_RUNNING', 'test'));
      await pollUntil(() => loopsUnder(dataDir).length === 0, 'no loop device of the computer', 10_000);
      assert.equal(existsSync(join(dataDir, 'computers', `g${second.generation}`)), false);
      assert.deepEqual(mountsMentioning(dataDir), []);
      assert.deepEqual(mountsMentioning('paddock-anchor'), []);
    });
  });

  it('a kept workspace is a disk of its profile’s size: it survives relaunches and restarts, is bounded, follows a changed diskMb, and /tmp starts empty each time', async () => {
    const root = mkdtempSync(join(tmpdir(), 'paddock-disk-kept-'));
    const dataDir = join(root, 'data');
    mkdirSync(dataDir);
    const start = (diskMb: number) =>
      new ComputerService({
        backend: new BwrapBackend({ logger: silentLogger() }),
        config: computerSchema.parse({
          autoLaunch: false,
          profiles: [{ ...SMALL, limits: { diskMb } }],
          named: { keeper: { workspace: 'keep' } },
        }),
        dataDir,
        dockUrl: 'http://127.0.0.1:7331',
        logger: silentLogger(),
      });
    const sh = async (m: ComputerManager, script: string) => (await runUntilExit(m, script)).stdout;
    const image = join(dataDir, 'workspaces', 'named-keeper', 'disk.img');
    try {
      let service = start(16);
      try {
        const m = service.byKey('named:keeper');
        await launchRunning(m, 'small');
        await sh(m, `head -c ${MIB} /dev/urandom > /workspace/kept.bin; echo t > /tmp/t`);
        const sum = await sh(m, 'md5sum < /workspace/kept.bin');
        assert.match(await sh(m, overfill('/workspace/big')), /No space left on device/);
        await launchRunning(m, 'small');
        assert.equal(await sh(m, 'md5sum < /workspace/kept.bin'), sum);
        assert.equal(await sh(m, 'ls -A /tmp | grep -vx .paddock-channel || true'), '', '/tmp starts empty');
        assert.equal(statSync(image).size, 16 * MIB);
      } finally {
        await service.close();
      }
      await pollUntil(() => loopsUnder(dataDir).length === 0, 'the kept disk to be released', 10_000);
      service = start(24);
      try {
        const m = service.byKey('named:keeper');
        await launchRunning(m, 'small');
        assert.match(await sh(m, 'ls /workspace'), /kept\.bin/);
        const sizeMb = Number((await sh(m, 'df -m /workspace | tail -1')).split(/\s+/)[1]);
        assert.ok(sizeMb > 16 && sizeMb <= 24, `the kept disk has ${sizeMb} MiB after diskMb went to 24`);
        assert.equal(statSync(image).size, 24 * MIB);
      } finally {
        await service.close();
      }
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });

  it('a kept workspace left as a plain directory moves into the disk at the next launch', async () => {
    const root = mkdtempSync(join(tmpdir(), 'paddock-disk-move-'));
    const dataDir = join(root, 'data');
    const plain = join(dataDir, 'workspaces', 'named-old', 'workspace');
    mkdirSync(join(plain, 'sub'), { recursive: true });
    writeFileSync(join(plain, 'sub', 'old.txt'), 'from before\n');
    const service = new ComputerService({
      backend: new BwrapBackend({ logger: silentLogger() }),
      config: computerSchema.parse({ autoLaunch: false, named: { old: { workspace: 'keep' } } }),
      dataDir,
      dockUrl: 'http://127.0.0.1:7331',
      logger: silentLogger(),
    });
    try {
      const m = service.byKey('named:old');
      await launchRunning(m);
      assert.equal((await runUntilExit(m, 'cat /workspace/sub/old.txt')).stdout, 'from before\n');
      assert.equal(existsSync(plain), false, 'the plain directory was moved into the disk');
      assert.ok(existsSync(join(dataDir, 'workspaces', 'named-old', 'disk.img')));
    } finally {
      await service.close();
      rmSync(root, { recursive: true, force: true });
    }
  });
});

describe('computer disk limit across a crash of the server', { skip: skipReason }, () => {
  it('kill -9 of a server whose computers hold disks leaves no loop device or mount once the next server starts', async () => {
    const config = (warm: number) =>
      `computer:\n  profiles:\n    - { id: small, name: Small, requires: [bash], warm: ${warm}, limits: { diskMb: 16 } }\n`;
    const project = tempProject(config(2));
    let serve = await startServe(project);
    try {
      await pollUntil(
        () => [...serve.stderr().matchAll(/computer\.warm_ready/g)].length >= 2,
        'two pooled sandboxes with their disks',
        60_000,
      );
      assert.equal(loopsUnder(project.dataDir).length, 2, 'each pooled sandbox has its disk');
      const oldPid = serve.child.pid;
      serve.child.kill('SIGKILL');
      await serve.stop();
      writeFileSync(join(project.dir, 'paddock.yaml'), config(0));
      serve = await startServe(project);
      await pollUntil(() => loopsUnder(project.dataDir).length === 0, 'no loop device left', 20_000);
      assert.deepEqual(mountsMentioning(`paddock-sandboxes-${oldPid}-`), []);
      assert.deepEqual(mountsMentioning(project.dataDir), []);
      assert.deepEqual(
        readdirSync(join(project.dataDir, 'computers')).filter((n) => n !== 'generation'),
        [],
        'no directory of the killed server’s computers is left',
      );
    } finally {
      await serve.stop('SIGKILL');
      project.cleanup();
    }
  });
});

describe('computer disk limit without a disk image (bwrap)', () => {
  it('says in the launch log that /workspace is not limited, and still bounds /tmp', async () => {
    await withComputer(
      { computer: { profiles: [SMALL] }, backend: { useDiskImages: false } },
      async ({ manager }) => {
        const c = await launchRunning(manager, 'small');
        const warned = manager.log
          .read({ limit: 100, level: 'warn' })
          .entries.find((e) => e.event === 'computer.disk_quota');
        assert.ok(warned, 'the launch log has the disk warning');
        assert.match(warned.message, /disk limit of 16 MiB is not enforced on \/workspace/);
        assert.match(c.instance!.enforcement.disk ?? '', /not enforced on \/workspace/);
        const r = await runUntilExit(manager, overfill('/tmp/fill'));
        // the tmpfs is full (ENOSPC), or the file-size limit stopped the writer first (SIGXFSZ)
        assert.match(r.stdout, /^\/tmp\/fill (1 .*No space left on device|153 )/);
      },
    );
  });
});
