import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { StoredInvocation } from '../../src/audit/types.js';
import { missingParents, processesWith, rows } from '../helpers/audit-rows.js';
import { connectHttp } from '../helpers/clients.js';
import { startServe, tempProject } from '../helpers/paddock-process.js';
import { pollUntil } from '../helpers/poll.js';

describe('audit rows across a crash of the server', () => {
  it('keeps the row of a run_command cut short by SIGKILL and marks it interrupted at the next start', async () => {
    const project = tempProject('computer:\n  defaultProfile: shell\n');
    let serve = await startServe(project);
    try {
      const client = await connectHttp(serve.url, serve.token);
      // a sleep no other test runs, to find the command's process on the host
      const sleeper = `sleep 120.${process.pid}`;
      // the command makes one tool-channel call, then waits for longer than the server lives
      const pending = client
        .callTool({
          name: 'run_command',
          arguments: {
            script: `paddock-tool call save_memory '{"content":"before the crash"}' >/dev/null; ${sleeper}`,
            waitMs: 10_000,
            timeoutMs: 200_000,
          },
        })
        .catch(() => undefined);
      const channelRow = (await pollUntil(
        () => rows(project.dataDir).find((r) => r.tool === 'save_memory' && r.via === 'channel') ?? false,
        'the channel call to be recorded',
        120_000,
      )) as StoredInvocation;
      await pollUntil(() => processesWith(sleeper).length > 0, 'the command to be sleeping');
      serve.child.kill('SIGKILL');
      await serve.stop();
      // closing aborts the call the dead server will never answer
      await client.close().catch(() => {});
      await pending;
      await pollUntil(
        () => processesWith(sleeper).length === 0,
        'no sandbox process to outlive the server',
        20_000,
      );
      const cut = rows(project.dataDir).find((r) => r.tool === 'run_command');
      assert.ok(cut, 'the run_command row exists although the call never ended');
      assert.equal(cut.state, 'running');
      assert.equal(channelRow.parentId, cut.id);
      assert.deepEqual(missingParents(project.dataDir), []);

      serve = await startServe(project);
      const after = (await pollUntil(
        () => rows(project.dataDir).find((r) => r.id === cut.id && r.state === 'interrupted') ?? false,
        'the cut row to be marked interrupted',
      )) as StoredInvocation;
      assert.equal(after.success, false);
      assert.match(after.errorMessage ?? '', /stopped before this call ended/);
      assert.match(after.input, /before the crash/);
      assert.deepEqual(missingParents(project.dataDir), []);
    } finally {
      await serve.stop('SIGKILL');
      project.cleanup();
    }
  });

  it('writes a read-only call one row when it answers, and an acting call its row before it acts: SIGKILL loses neither kind', async () => {
    const project = tempProject('computer:\n  defaultProfile: shell\n');
    let serve = await startServe(project);
    try {
      const client = await connectHttp(serve.url, serve.token);
      const sleeper = `sleep 121.${process.pid}`;
      const started = (await client.callTool({
        name: 'run_command',
        arguments: { script: sleeper, waitMs: 0, timeoutMs: 200_000 },
      })) as { structuredContent?: { jobId?: string } };
      const jobId = String(started.structuredContent?.jobId);
      for (let i = 0; i < 3; i++) await client.callTool({ name: 'get_computer_status', arguments: {} });
      // in flight at the kill: a read-only call that waits for output the job never writes, and
      // an acting one that waits for a second command
      const waiting = client
        .callTool({ name: 'read_job', arguments: { jobId, waitMs: 10_000 } })
        .catch(() => undefined);
      const second = `sleep 122.${process.pid}`;
      const actingCall = client
        .callTool({ name: 'run_command', arguments: { script: second, waitMs: 10_000, timeoutMs: 200_000 } })
        .catch(() => undefined);
      await pollUntil(() => processesWith(second).length > 0, 'the second command to be sleeping');
      const before = rows(project.dataDir);
      assert.equal(
        before.filter((r) => r.tool === 'get_computer_status' && r.state === 'ended').length,
        3,
        'each answered read-only call has its ended row',
      );
      assert.deepEqual(
        before.filter((r) => r.tool === 'read_job' && r.state === 'running'),
        [],
        'a read-only call in flight has no running row: nothing it does can be lost',
      );
      const acting = before.find((r) => r.tool === 'run_command' && r.state === 'running');
      assert.ok(acting, 'the acting call in flight wrote its row before it acted');
      serve.child.kill('SIGKILL');
      await serve.stop();
      await client.close().catch(() => {});
      await Promise.all([waiting, actingCall]);
      serve = await startServe(project);
      await pollUntil(
        () => rows(project.dataDir).find((r) => r.id === acting.id && r.state === 'interrupted') ?? false,
        'the acting row to be marked interrupted',
      );
      const after = rows(project.dataDir);
      assert.equal(
        after.filter((r) => r.tool === 'get_computer_status').length,
        3,
        'no answered row was lost',
      );
      assert.deepEqual(
        after.filter((r) => r.state === 'running'),
        [],
        'no row is left running after the restart',
      );
    } finally {
      await serve.stop('SIGKILL');
      project.cleanup();
    }
  });
});
