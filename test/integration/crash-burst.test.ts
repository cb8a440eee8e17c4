/**
 * SIGKILL of the server in the middle of a burst of calls from several clients: every call that
 * was answered has its finished row, calls cut short are marked interrupted at the next start, no
 * row names a missing parent, no sandbox process outlives the server, and the next server serves
 * clients and the dock as before.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Client } from '@modelcontextprotocol/client';
import { missingParents, processesWith, rows } from '../helpers/audit-rows.js';
import { connectHttp } from '../helpers/clients.js';
import { startServe, tempProject } from '../helpers/paddock-process.js';
import { pollUntil } from '../helpers/poll.js';

const CLIENTS = 4;

interface Answered {
  marker: string;
  tool: string;
}

/** Calls tools in a loop until the server goes away; records each answered call's marker. */
async function burst(client: Client, k: number, answered: Answered[], stop: () => boolean): Promise<void> {
  for (let i = 0; !stop(); i++) {
    const marker = `burst-c${k}-n${i}`;
    const [tool, args] =
      i % 4 === 3
        ? ['run_command', { script: `echo ${marker}`, waitMs: 10_000 }]
        : ['save_memory', { content: `note ${marker}` }];
    try {
      const r = await client.callTool({ name: tool, arguments: args });
      if (r.isError) throw new Error(`${tool} failed: ${JSON.stringify(r.content)}`);
      answered.push({ marker, tool });
    } catch (e) {
      if (stop()) return;
      throw e;
    }
  }
}

describe('a crash in the middle of a burst', () => {
  it('keeps a finished row for every answered call, marks cut calls interrupted, and leaves no sandbox process', async () => {
    const project = tempProject('computer:\n  defaultProfile: shell\n');
    let serve = await startServe(project);
    const clients: Client[] = [];
    try {
      for (let k = 0; k < CLIENTS; k++) clients.push(await connectHttp(serve.url, serve.token, `burst-${k}`));
      let killed = false;
      const answered: Answered[] = [];
      const loops = clients.map((c, k) => burst(c, k, answered, () => killed));
      await pollUntil(
        () => answered.filter((a) => a.tool === 'run_command').length >= CLIENTS && answered.length >= 40,
        'calls of every kind to be answered',
        120_000,
      );
      // and a call still waiting for its command when the server dies
      const sleeper = `sleep 300.${process.pid}`;
      const waiting = await connectHttp(serve.url, serve.token, 'burst-waiting');
      clients.push(waiting);
      const inFlight = waiting
        .callTool({ name: 'run_command', arguments: { script: sleeper, waitMs: 10_000, timeoutMs: 300_000 } })
        .catch(() => undefined);
      await pollUntil(
        () =>
          processesWith(sleeper).length > 0 &&
          rows(project.dataDir).some((r) => r.state === 'running' && r.input.includes(sleeper)),
        'the waiting command to be running and recorded',
        60_000,
      );
      killed = true;
      serve.child.kill('SIGKILL');
      await serve.stop();
      for (const c of clients) await c.close().catch(() => {});
      await Promise.all(loops);
      await inFlight;
      const seen = [...answered];

      await pollUntil(
        () => processesWith(sleeper).length === 0,
        'no sandbox process to outlive the server',
        20_000,
      );
      const before = rows(project.dataDir);
      for (const a of seen) {
        const row = before.find((r) => r.tool === a.tool && r.input.includes(a.marker));
        assert.ok(row, `the answered call ${a.marker} (${a.tool}) has a row`);
        assert.equal(row.state, 'ended', `the row of ${a.marker} is finished`);
        assert.equal(row.success, true);
      }
      assert.deepEqual(missingParents(project.dataDir), []);
      const cut = before.filter((r) => r.state === 'running').map((r) => r.id);
      assert.ok(cut.length >= 1, 'the long command was cut short');

      serve = await startServe(project);
      await pollUntil(
        () => rows(project.dataDir).every((r) => !cut.includes(r.id) || r.state === 'interrupted'),
        'every cut call to be marked interrupted',
      );
      assert.deepEqual(missingParents(project.dataDir), []);
      const client = await connectHttp(serve.url, serve.token);
      try {
        const after = await client.callTool({
          name: 'save_memory',
          arguments: { content: 'after the crash' },
        });
        assert.notEqual(after.isError, true);
        const job = await client.callTool({
          name: 'run_command',
          arguments: { script: 'echo again', waitMs: 10_000 },
        });
        assert.notEqual(job.isError, true, JSON.stringify(job.content));
      } finally {
        await client.close();
      }
      const dock = await fetch(`${serve.url}/`, { redirect: 'manual' });
      assert.ok(dock.status < 500, `the dock answers (${dock.status})`);
    } finally {
      await serve.stop('SIGKILL');
      project.cleanup();
    }
  });
});
