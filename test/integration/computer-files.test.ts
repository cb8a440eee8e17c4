import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { isPaddockError } from '../../src/shared/errors.js';
import { type Call, codeOf, launchRunning, toolCaller, withComputer } from '../unit/computer/fixture.js';

async function sh(call: Call, script: string) {
  const r = await call('run_command', { script, waitMs: 10_000 });
  assert.equal(r.exitCode, 0, String(r.stderr));
  return r;
}

describe('computer files (bwrap)', { concurrency: false }, () => {
  it('reads neither the host /etc/shadow nor the data directory through workspace symlinks, even with a policy that allows every path', async () => {
    for (const policy of [{}, { files: { read: ['/'], write: ['/workspace'] } }]) {
      await withComputer({ database: true, policy }, async ({ manager, dataDir, ctx }) => {
        const call = toolCaller(manager, ctx);
        await launchRunning(manager);
        writeFileSync(join(dataDir, 'secret.txt'), 'host-secret');
        await sh(
          call,
          `ln -s /etc/shadow /workspace/shadow && ln -s ${dataDir}/secret.txt /workspace/secret && ln -s ${dataDir} /workspace/data`,
        );
        for (const path of [
          '/workspace/shadow',
          '/workspace/secret',
          '/workspace/data/paddock.db',
          '/workspace/data/secret.txt',
        ]) {
          const code = await codeOf(call('read_file', { path }));
          assert.ok(['POLICY_DENIED', 'NOT_FOUND'].includes(code), `${path}: ${code}`);
        }
        assert.ok(
          readFileSync('/etc/shadow', 'utf8').length > 0,
          'the host file exists, so the guest really could not see it',
        );
      });
    }
  });

  it('refuses read_file, list_files and write_file on a path no rule allows without booting a computer', async () => {
    await withComputer({}, async ({ manager, ctx }) => {
      const call = toolCaller(manager, ctx);
      assert.equal(await codeOf(call('read_file', { path: '/etc/shadow' })), 'POLICY_DENIED');
      assert.equal(await codeOf(call('list_files', { path: '/root' })), 'POLICY_DENIED');
      assert.equal(
        await codeOf(call('write_file', { path: '/etc/x', content: 'x', overwrite: true })),
        'POLICY_DENIED',
      );
      assert.equal(manager.computer, null, 'no computer was booted for a refusal');
      const read = await call('read_file', { path: '/workspace/none.txt' }).catch((e: unknown) => e);
      assert.ok(isPaddockError(read) && read.code === 'NOT_FOUND', String(read));
      assert.ok(manager.computer, 'an allowed path does boot the default profile (autoLaunch is on)');
    });
  });

  it('denies a write through a symlink that leaves the allowed roots, and logs the denial', async () => {
    await withComputer({}, async ({ manager, ctx }) => {
      const call = toolCaller(manager, ctx);
      await launchRunning(manager);
      await sh(
        call,
        'ln -s /etc /workspace/etc-link && ln -s /usr/local/bin/tool /workspace/tool && mkdir -p /workspace/ok && ln -s /workspace/ok /workspace/ok-link',
      );
      assert.equal(
        await codeOf(
          call('write_file', { path: '/workspace/etc-link/profile', content: 'x', overwrite: true }),
        ),
        'POLICY_DENIED',
      );
      assert.equal(
        await codeOf(call('write_file', { path: '/workspace/tool', content: 'x', overwrite: false })),
        'POLICY_DENIED',
      );
      const inside = await call('write_file', {
        path: '/workspace/ok-link/note.txt',
        content: 'through a link',
        overwrite: false,
      });
      assert.equal(inside.bytesWritten, 14);
      const read = await call('read_file', { path: '/workspace/ok/note.txt' });
      assert.equal(read.content, 'through a link');
      const denials = manager
        .readLogs({ limit: 200, level: 'warn' })
        .entries.filter((e) => e.event === 'policy.denied');
      assert.equal(denials.length, 2);
    });
  });

  it('never writes through a link on the path as written: a linked directory or a link out of the write roots is denied and nothing changes there', async () => {
    await withComputer(
      { policy: { files: { read: ['/workspace', '/tmp'], write: ['/workspace'] } } },
      async ({ manager, ctx }) => {
        const call = toolCaller(manager, ctx);
        await launchRunning(manager);
        await sh(
          call,
          'mkdir -p /tmp/out && echo old > /tmp/out/existing.txt && ln -s /tmp/out /workspace/dir-link && ln -s /tmp/out/dangling.txt /workspace/dangling && ln -s /tmp/out/existing.txt /workspace/existing',
        );
        const attempts: [string, boolean][] = [
          ['/workspace/dir-link/new.txt', false],
          ['/workspace/dir-link/existing.txt', true],
          ['/workspace/dangling', false],
          ['/workspace/existing', true],
        ];
        for (const [path, overwrite] of attempts) {
          assert.equal(
            await codeOf(call('write_file', { path, content: 'x', overwrite })),
            'POLICY_DENIED',
            path,
          );
        }
        const left = await sh(call, 'ls -A /tmp/out; cat /tmp/out/existing.txt');
        assert.equal(String(left.stdout), 'existing.txt\nold\n');
      },
    );
  });

  it('creates a file exactly once when 20 writes with overwrite=false race on one path', async () => {
    await withComputer({}, async ({ manager, ctx }) => {
      const call = toolCaller(manager, ctx);
      await launchRunning(manager);
      const outcomes = await Promise.all(
        Array.from({ length: 20 }, (_, i) =>
          codeOf(
            call('write_file', { path: '/workspace/race.txt', content: `writer ${i}`, overwrite: false }),
          ),
        ),
      );
      assert.equal(outcomes.filter((o) => o === 'ok').length, 1, outcomes.join(','));
      assert.equal(outcomes.filter((o) => o === 'FILE_EXISTS').length, 19);
      const content = String((await call('read_file', { path: '/workspace/race.txt' })).content);
      assert.match(content, /^writer \d+$/);
      const left = await sh(call, 'ls -A /workspace | wc -l');
      assert.equal(String(left.stdout).trim(), '1', 'no temporary files are left behind');
    });
  });

  it('refuses FIFOs, devices and directories with clear errors instead of hanging', async () => {
    await withComputer(
      { policy: { files: { read: ['/'], write: ['/workspace'] } } },
      async ({ manager, ctx }) => {
        const call = toolCaller(manager, ctx);
        await launchRunning(manager);
        await sh(call, 'mkfifo /workspace/pipe');
        for (const path of ['/workspace/pipe', '/dev/zero', '/workspace']) {
          await assert.rejects(
            call('read_file', { path }),
            (e: unknown) =>
              isPaddockError(e) && e.code === 'INVALID_ARGUMENT' && /regular file|directory/.test(e.message),
            path,
          );
        }
        await assert.rejects(
          call('write_file', { path: '/workspace/pipe', content: 'x', overwrite: true }),
          (e: unknown) => isPaddockError(e) && e.code === 'INVALID_ARGUMENT',
        );
        await assert.rejects(
          call('write_file', { path: '/workspace', content: 'x', overwrite: true }),
          (e: unknown) => isPaddockError(e) && e.code === 'INVALID_ARGUMENT',
        );
      },
    );
  });

  it('reads text by byte offsets without splitting characters, refuses invalid UTF-8 and suggests base64', async () => {
    await withComputer({}, async ({ manager, ctx }) => {
      const call = toolCaller(manager, ctx);
      await launchRunning(manager);
      await call('write_file', { path: '/workspace/t.txt', content: 'a€b', overwrite: false });
      const first = await call('read_file', { path: '/workspace/t.txt', byteLimit: 2 });
      assert.deepEqual([first.content, first.bytesRead, first.nextOffset, first.eof], ['a', 1, 1, false]);
      const second = await call('read_file', { path: '/workspace/t.txt', offset: 1, byteLimit: 10 });
      assert.deepEqual([second.content, second.bytesRead, second.nextOffset, second.eof], ['€b', 4, 5, true]);
      await call('write_file', {
        path: '/workspace/bin',
        content: Buffer.from([0xff, 0xfe, 0x00, 0x41]).toString('base64'),
        encoding: 'base64',
        overwrite: false,
      });
      await assert.rejects(
        call('read_file', { path: '/workspace/bin' }),
        (e: unknown) => isPaddockError(e) && e.code === 'INVALID_ARGUMENT' && /base64/.test(e.message),
      );
      const raw = await call('read_file', { path: '/workspace/bin', encoding: 'base64' });
      assert.deepEqual([...Buffer.from(String(raw.content), 'base64')], [0xff, 0xfe, 0x00, 0x41]);
    });
  });

  it('validates write content, size, parent directory and overwrite, and replaces files atomically keeping their mode', async () => {
    await withComputer({}, async ({ manager, ctx }) => {
      const call = toolCaller(manager, ctx);
      const c = await launchRunning(manager);
      const bad = (input: Record<string, unknown>) =>
        codeOf(call('write_file', { path: '/workspace/f', overwrite: true, ...input }));
      assert.equal(await bad({ content: 'not base64!', encoding: 'base64' }), 'INVALID_ARGUMENT');
      assert.equal(await bad({ content: 'x'.repeat(65_537) }), 'INVALID_ARGUMENT');
      assert.equal(
        await bad({ content: Buffer.alloc(65_537).toString('base64'), encoding: 'base64' }),
        'INVALID_ARGUMENT',
      );
      assert.equal(await bad({ content: 'x'.repeat(65_536) }), 'ok');
      assert.equal(
        await codeOf(call('write_file', { path: '/workspace/missing/f', content: 'x', overwrite: true })),
        'NOT_FOUND',
      );
      assert.equal(
        await codeOf(call('write_file', { path: 'relative.txt', content: 'x', overwrite: true })),
        'INVALID_ARGUMENT',
      );
      assert.equal(
        await codeOf(call('write_file', { path: '/workspace/../etc/passwd', content: 'x', overwrite: true })),
        'INVALID_ARGUMENT',
      );
      await sh(call, 'printf old > /workspace/s.sh && chmod 750 /workspace/s.sh');
      assert.equal(
        await codeOf(call('write_file', { path: '/workspace/s.sh', content: 'new', overwrite: false })),
        'FILE_EXISTS',
      );
      assert.equal(
        readFileSync(join(c.hostWorkspace, 's.sh'), 'utf8'),
        'old',
        'FILE_EXISTS leaves the file untouched',
      );
      const replaced = await call('write_file', { path: '/workspace/s.sh', content: 'new', overwrite: true });
      assert.equal(replaced.created, false);
      const mode = await sh(call, 'stat -c %a /workspace/s.sh; cat /workspace/s.sh');
      assert.equal(mode.stdout, '750\nnew');
    });
  });

  it('lists directories with types, sizes and modes, one page at a time', async () => {
    await withComputer({}, async ({ manager, ctx }) => {
      const call = toolCaller(manager, ctx);
      await launchRunning(manager);
      await sh(
        call,
        'cd /workspace && mkdir d && printf 12345 > e.txt && ln -s e.txt f && mkfifo g && touch a',
      );
      const page1 = await call('list_files', { path: '/workspace', limit: 2 });
      const page2 = await call('list_files', { path: '/workspace', offset: 2, limit: 10 });
      const entries = [
        ...(page1.entries as { name: string; type: string; size: number }[]),
        ...(page2.entries as { name: string; type: string; size: number }[]),
      ];
      assert.deepEqual(
        entries.map((e) => `${e.name}:${e.type}`),
        ['a:file', 'd:dir', 'e.txt:file', 'f:symlink', 'g:other'],
      );
      assert.equal(entries.find((e) => e.name === 'e.txt')!.size, 5);
      assert.equal(page1.total, 5);
      assert.equal(page1.nextOffset, 2);
      assert.equal(page2.nextOffset, null);
      assert.equal(await codeOf(call('list_files', { path: '/workspace/e.txt' })), 'INVALID_ARGUMENT');
      assert.equal(await codeOf(call('list_files', { path: '/etc' })), 'POLICY_DENIED');
    });
  });
});
