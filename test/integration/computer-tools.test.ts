import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { isPaddockError } from '../../src/shared/errors.js';
import { pollUntil } from '../helpers/poll.js';
import { type Call, codeOf, launchRunning, toolCaller, withComputer } from '../unit/computer/fixture.js';

async function untilRunning(call: Call): Promise<Record<string, unknown>> {
  return pollUntil(
    async () => {
      const s = await call('get_computer_status');
      return s.lifecycle === 'booting' ? null : s;
    },
    'the boot to end',
    15_000,
  );
}

describe('computer tools (bwrap)', { concurrency: false }, () => {
  it('launches in place: returns the dock URL at once, status goes booting → running, old job ids go stale', async () => {
    await withComputer({}, async ({ manager, ctx, noted }) => {
      const call = toolCaller(manager, ctx);
      assert.equal((await call('get_computer_status')).lifecycle, 'none');
      const launch = await call('launch_computer', { profileId: 'shell' });
      assert.equal(launch.lifecycle, 'booting');
      // the dock, opened on this computer; never a credential in it
      assert.match(String(launch.url), /^http:\/\/127\.0\.0\.1:7331\/\?computer=[A-Za-z0-9%._-]+$/);
      assert.doesNotMatch(String(launch.url), /token|code=/);
      const status = await untilRunning(call);
      assert.equal(status.lifecycle, 'running');
      assert.equal(status.generation, launch.generation);
      assert.ok((status.capabilities as string[]).includes('jobs'));
      assert.equal(status.activeTerminal, null);
      const job = await call('run_command', { script: 'echo hi' });
      assert.deepEqual(noted.at(-1), { generation: launch.generation, jobId: job.jobId });
      await call('launch_computer', { profileId: 'shell' });
      await untilRunning(call);
      assert.equal(await codeOf(call('read_job', { jobId: job.jobId })), 'STALE_GENERATION');
      assert.equal(await codeOf(call('launch_computer', { profileId: 'nope' })), 'NOT_FOUND');
      const rejected = manager.readLogs({ limit: 200, level: 'warn' }).entries.map((e) => e.message);
      assert.ok(
        rejected.some((m) => m.includes('read_job: STALE_GENERATION')),
        rejected.join('\n'),
      );
    });
  });

  it('refuses a second launch while the first is booting, with NOT_RUNNING and a log entry', async () => {
    await withComputer({}, async ({ manager, ctx }) => {
      const call = toolCaller(manager, ctx);
      const first = await call('launch_computer', { profileId: 'shell' });
      const second = codeOf(call('launch_computer', { profileId: 'python' }));
      assert.equal(await second, 'NOT_RUNNING');
      const status = await untilRunning(call);
      assert.equal(status.generation, first.generation);
      assert.equal(status.profileId, 'shell');
      assert.ok(manager.readLogs({ limit: 100 }).entries.some((e) => e.event === 'computer.launch_refused'));
    });
  });

  it('makes act tools idempotent by requestId: same arguments replay the first result without a second effect, others conflict', async () => {
    await withComputer({}, async ({ manager, ctx }) => {
      const call = toolCaller(manager, ctx);
      const a = await call('launch_computer', { profileId: 'shell', requestId: 'boot-1' });
      const b = await call('launch_computer', { profileId: 'shell', requestId: 'boot-1' });
      assert.deepEqual(b, a);
      assert.equal(
        await codeOf(call('launch_computer', { profileId: 'python', requestId: 'boot-1' })),
        'IDEMPOTENCY_CONFLICT',
      );
      const c = await untilRunning(call);
      assert.equal(c.generation, a.generation);
      const input = { script: 'echo ran >> /workspace/count', waitMs: 5000, requestId: 'cmd-1' };
      const r1 = await call('run_command', input);
      const r2 = await call('run_command', { ...input });
      assert.equal(r2.jobId, r1.jobId);
      assert.equal(readFileSync(join(manager.computer!.hostWorkspace, 'count'), 'utf8'), 'ran\n');
      assert.equal(await codeOf(call('run_command', { ...input, script: 'true' })), 'IDEMPOTENCY_CONFLICT');
    });
  });

  it('boots the default profile when a tool needs a computer and none was launched', async () => {
    await withComputer({}, async ({ manager, ctx }) => {
      const call = toolCaller(manager, ctx);
      const r = await call('run_command', { script: 'echo auto', waitMs: 5000 });
      assert.equal(r.stdout, 'auto\n');
      assert.equal((await call('get_computer_status')).profileId, 'shell');
      assert.ok(manager.readLogs({ limit: 50 }).entries.some((e) => e.event === 'computer.autolaunch'));
    });
    await withComputer({ computer: { autoLaunch: false } }, async ({ manager, ctx }) => {
      const call = toolCaller(manager, ctx);
      await assert.rejects(
        call('run_command', { script: 'true' }),
        (e: unknown) => isPaddockError(e) && e.code === 'NOT_RUNNING' && /launch_computer/.test(e.message),
      );
    });
  });

  it('drops dangerous environment variables from run_command and reads jobs by cursor', async () => {
    await withComputer({}, async ({ manager, ctx }) => {
      const call = toolCaller(manager, ctx);
      await launchRunning(manager);
      const r = await call('run_command', {
        // biome-ignore lint/suspicious/noTemplateCurlyInString: shell parameter expansion, not a template
        script: 'echo "preload=${LD_PRELOAD-unset} mine=$MINE"; for i in 1 2 3; do echo line$i; done >&2',
        env: { LD_PRELOAD: '/tmp/evil.so', MINE: 'yes' },
        waitMs: 5000,
      });
      assert.equal(r.stdout, 'preload=unset mine=yes\n');
      assert.equal(r.stderr, 'line1\nline2\nline3\n');
      const more = await call('read_job', { jobId: r.jobId, cursor: r.nextCursor });
      assert.deepEqual([more.stdout, more.stderr, more.terminationObserved], ['', '', true]);
      const cancel = await call('cancel_job', { jobId: r.jobId });
      assert.equal(cancel.status, 'already_finished');
      const logs = await call('read_logs', { limit: 200 });
      assert.ok((logs.entries as { event: string }[]).some((e) => e.event === 'job.exit'));
      assert.equal(await codeOf(call('read_logs', { cursor: 'bogus' })), 'INVALID_ARGUMENT');
    });
  });

  it('creates launch links that run nothing, and boots them with their startup script as a job', async () => {
    await withComputer({ database: true }, async ({ manager, ctx }) => {
      const call = toolCaller(manager, ctx);
      const link = await call('create_launch_link', {
        profileId: 'python',
        startupScript: 'echo from-link > /workspace/started',
      });
      assert.match(String(link.url), /^http:\/\/127\.0\.0\.1:7331\/launch\/[A-Za-z0-9_-]+$/);
      assert.equal(manager.status().lifecycle, 'none', 'creating a link launches nothing');
      assert.equal(await codeOf(call('create_launch_link', { profileId: 'nope' })), 'NOT_FOUND');
      const booted = await manager.bootLaunchLink(String(link.id));
      assert.equal(booted.lifecycle, 'running');
      assert.equal(manager.status().profileId, 'python');
      assert.ok(booted.jobId);
      await pollUntil(
        () => manager.readJob(booted.jobId!, undefined, 100).terminationObserved,
        'the startup script',
        10_000,
      );
      assert.equal(readFileSync(join(manager.computer!.hostWorkspace, 'started'), 'utf8'), 'from-link\n');
      await assert.rejects(
        manager.bootLaunchLink('unknown-link-id'),
        (e: unknown) => isPaddockError(e) && e.code === 'NOT_FOUND',
      );
      await assert.rejects(
        manager.bootLaunchLink('../x'),
        (e: unknown) => isPaddockError(e) && e.code === 'INVALID_ARGUMENT',
      );
    });
  });

  it('shell runs only allowed executables, passes argv without a shell, and answers in the job shape', async () => {
    const policy = { exec: { allow: [{ name: 'echo' }, { name: 'sleep' }] } };
    await withComputer({ policy }, async ({ manager, ctx }) => {
      const call = toolCaller(manager, ctx);
      await launchRunning(manager);
      const r = await call('shell', { argv: ['echo', '$HOME', '*', '; rm -rf /'] });
      assert.equal(r.stdout, '$HOME * ; rm -rf /\n');
      assert.equal(r.exitCode, 0);
      for (const key of [
        'jobId',
        'stderr',
        'nextCursor',
        'signal',
        'timedOut',
        'canceled',
        'terminationObserved',
        'durationMs',
        'toolCalls',
      ]) {
        assert.ok(key in r, key);
      }
      assert.equal(await codeOf(call('shell', { argv: ['bash', '-c', 'id'] })), 'POLICY_DENIED');
      const slow = await call('shell', { argv: ['sleep', '30'], timeoutMs: 300 });
      assert.equal(slow.timedOut, true);
      const listing = await call('list_dir', { path: '/workspace' });
      assert.deepEqual(listing.entries, []);
    });
  });
});
