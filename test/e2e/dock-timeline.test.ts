/**
 * The dock's timeline of a computer: checkpoints between its tool calls, restore (after a
 * confirmation), "back to before this call" and fork. A real `paddock serve`, a real MCP client as
 * the agent on a named computer, and Debian's chromium as the person.
 */
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import type { Client } from '@modelcontextprotocol/client';
import { callOk, connectHttp } from '../helpers/clients.js';
import { signedInDock } from '../helpers/dock-page.js';
import { runCli, startServe, tempProject } from '../helpers/paddock-process.js';
import { pollUntil } from '../helpers/poll.js';

const CONFIG = `computer:
  defaultProfile: shell
`;

/** What `cat /workspace/note.txt; ls /workspace` prints once the computer runs (a restore relaunches it). */
async function workspaceOf(client: Client): Promise<string> {
  let seen = '';
  await pollUntil(
    async () => {
      const r = await client.callTool({
        name: 'run_command',
        arguments: { script: 'cat /workspace/note.txt; ls /workspace', waitMs: 10_000 },
      });
      if (r.isError) return false;
      const s = r.structuredContent as { exitCode: number | null; stdout: string };
      seen = s.stdout;
      return s.exitCode === 0;
    },
    'the computer to run and show its workspace',
    30_000,
  );
  return seen;
}

describe('the dock’s timeline of a computer', { concurrency: false }, () => {
  const cleanups: Array<() => Promise<unknown> | unknown> = [];
  after(async () => {
    for (const c of cleanups.reverse()) await c();
  });

  it('a person takes the computer back to before a call and forks a checkpoint into a new computer; the files follow', async () => {
    const project = tempProject(CONFIG);
    cleanups.push(() => project.cleanup());
    const serve = await startServe(project);
    cleanups.push(() => serve.stop());
    const agent = await connectHttp(serve.url, serve.token, 'timeline-agent', { computer: 'box' });
    cleanups.push(() => agent.close().catch(() => undefined));
    await callOk(agent, 'run_command', { script: 'echo one > /workspace/note.txt', waitMs: 10_000 });
    const first = await callOk(agent, 'checkpoint_computer', { label: 'first state' });
    await callOk(agent, 'run_command', {
      script: 'echo two > /workspace/note.txt && touch /workspace/extra',
      waitMs: 10_000,
    });
    assert.equal(await workspaceOf(agent), 'two\nextra\nnote.txt\n');

    const { browser, page } = await signedInDock(serve, { width: 1400, height: 900 });
    cleanups.push(() => browser.close().catch(() => undefined));
    await page.locator('[data-tab="timeline"]').click();
    const checkpoint = (label: string) => page.getByTestId('timeline-checkpoint').filter({ hasText: label });
    await checkpoint('first state').waitFor();
    assert.equal(await checkpoint('first state').getAttribute('data-id'), first.checkpointId);

    // a checkpoint taken while the page is open shows up without a reload, above the call before it
    const second = await callOk(agent, 'checkpoint_computer', { label: 'second state' });
    await checkpoint('second state').waitFor();
    const order = await page
      .locator('[data-testid="timeline-checkpoint"], [data-testid="timeline-call"]')
      .evaluateAll((els) => els.map((e) => e.getAttribute('data-id')));
    const call = page.getByTestId('timeline-call').filter({ hasText: 'echo two' });
    const callId = await call.getAttribute('data-id');
    assert.ok(
      order.indexOf(String(second.checkpointId)) < order.indexOf(callId) &&
        order.indexOf(callId) < order.indexOf(String(first.checkpointId)),
      `newest first, the call between its checkpoints: ${JSON.stringify(order)}`,
    );

    // back to before the call that wrote "two": asks first, then restores the checkpoint before it
    await call.getByTestId('call-undo').click();
    const confirm = page.getByTestId('checkpoint-confirm');
    await confirm.waitFor();
    assert.match((await confirm.textContent()) ?? '', /first state.*Every process in it stops/s);
    await page.getByTestId('restore-go').click();
    await pollUntil(
      async () => (await workspaceOf(agent)) === 'one\nnote.txt\n',
      'the files of before the call back in /workspace',
      60_000,
    );
    // the restore is the person's call, in the audit trail; the state it left is a checkpoint
    const audit = await runCli(project, ['audit', '--tool', 'restore_checkpoint', '--json']);
    const rows = audit.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { caller: string; success: boolean });
    assert.deepEqual(
      rows.map((r) => [r.caller, r.success]),
      [['dock:owner', true]],
    );
    await checkpoint('before restoring').waitFor();

    // fork the second checkpoint into a new computer: it has that state, the origin keeps its own
    await checkpoint('second state').getByTestId('checkpoint-fork').click();
    await page.getByTestId('fork-name').fill('twin');
    await page.getByTestId('fork-go').click();
    const twin = await connectHttp(serve.url, serve.token, 'timeline-twin', { computer: 'twin' });
    cleanups.push(() => twin.close().catch(() => undefined));
    assert.equal(await workspaceOf(twin), 'two\nextra\nnote.txt\n');
    await callOk(twin, 'run_command', { script: 'echo three > /workspace/note.txt', waitMs: 10_000 });
    assert.equal(await workspaceOf(agent), 'one\nnote.txt\n', 'the fork never touches its origin');
  });

  it('a restore waits for the person’s confirmation, and Cancel leaves the computer as it is', async () => {
    const project = tempProject(CONFIG);
    cleanups.push(() => project.cleanup());
    const serve = await startServe(project);
    cleanups.push(() => serve.stop());
    const agent = await connectHttp(serve.url, serve.token, 'timeline-agent', { computer: 'solo' });
    cleanups.push(() => agent.close().catch(() => undefined));
    await callOk(agent, 'run_command', { script: 'echo one > /workspace/note.txt', waitMs: 10_000 });
    await callOk(agent, 'checkpoint_computer', { label: 'only' });
    await callOk(agent, 'run_command', { script: 'echo two > /workspace/note.txt', waitMs: 10_000 });
    const { browser, page } = await signedInDock(serve, { width: 1400, height: 900 });
    cleanups.push(() => browser.close().catch(() => undefined));
    await page.locator('[data-tab="timeline"]').click();
    const only = page.getByTestId('timeline-checkpoint').filter({ hasText: 'only' });
    await only.getByTestId('checkpoint-restore').click();
    await page.getByTestId('restore-cancel').click();
    assert.equal(await page.getByTestId('checkpoint-confirm').isHidden(), true);
    // a marker call after the cancel: had a restore been sent, its audit row would come before it
    await callOk(agent, 'get_computer_status', {});
    const audit = await runCli(project, ['audit', '--json']);
    const tools = audit.stdout
      .trim()
      .split('\n')
      .map((l) => (JSON.parse(l) as { tool: string }).tool);
    assert.equal(tools.at(-1), 'get_computer_status');
    assert.ok(!tools.includes('restore_checkpoint'), JSON.stringify(tools));
    assert.equal(await workspaceOf(agent), 'two\nnote.txt\n');
  });

  it('a forged frame cannot restore another computer than the one the dock shows, nor fork outside a computer name', async () => {
    const project = tempProject(CONFIG);
    cleanups.push(() => project.cleanup());
    const serve = await startServe(project);
    cleanups.push(() => serve.stop());
    const other = await connectHttp(serve.url, serve.token, 'other', { computer: 'other' });
    cleanups.push(() => other.close().catch(() => undefined));
    const kept = await callOk(other, 'checkpoint_computer', {});
    await callOk(other, 'run_command', { script: 'echo later > /workspace/note.txt', waitMs: 10_000 });
    // launched last, so the dock shows "shown", not "other"
    const shown = await connectHttp(serve.url, serve.token, 'shown', { computer: 'shown' });
    cleanups.push(() => shown.close().catch(() => undefined));
    await callOk(shown, 'launch_computer', { profileId: 'shell' });
    const { browser, page } = await signedInDock(serve, { width: 1400, height: 900 });
    cleanups.push(() => browser.close().catch(() => undefined));
    const replies = await page.evaluate(
      async (frames) => {
        const ws = new WebSocket(
          `ws://${(globalThis as unknown as { location: { host: string } }).location.host}/dock/ws`,
        );
        const got: unknown[] = [];
        await new Promise<void>((resolve, reject) => {
          ws.onmessage = (ev) => {
            const m = JSON.parse(String(ev.data)) as { type: string; requestId?: string };
            if (m.type === 'reply' && m.requestId) got.push(m);
            if (got.length === frames.length) resolve();
          };
          ws.onopen = () => {
            for (const f of frames) ws.send(JSON.stringify(f));
          };
          ws.onerror = () => reject(new Error('socket failed'));
        });
        ws.close();
        return got;
      },
      [
        {
          type: 'checkpoint.restore',
          computer: 'named:other',
          checkpointId: kept.checkpointId,
          requestId: 'r1',
        },
        {
          type: 'checkpoint.fork',
          computer: 'named:shown',
          checkpointId: kept.checkpointId,
          name: '../etc',
          requestId: 'r2',
        },
      ],
    );
    const byId = new Map(
      (replies as { requestId: string; ok: boolean; message: string }[]).map((r) => [r.requestId, r]),
    );
    assert.equal(byId.get('r1')?.ok, false);
    assert.match(byId.get('r1')?.message ?? '', /shows named:shown now, not named:other/);
    assert.equal(byId.get('r2')?.ok, false, JSON.stringify(byId.get('r2')));
    assert.equal(await workspaceOf(other), 'later\nnote.txt\n', 'the other computer was not restored');
    const listed = await runCli(project, ['computers', 'list', '--json']);
    const names = (JSON.parse(listed.stdout) as { computers: { name: string }[] }).computers.map(
      (c) => c.name,
    );
    assert.deepEqual(names.sort(), ['named:other', 'named:shown']);
  });
});
