/**
 * A named computer keeps its files across the server's life: after `paddock stop` it boots again
 * from the checkpoint taken as it stopped; after a crash (SIGKILL of `paddock serve`) from the
 * latest checkpoint taken before it. Real server, real MCP client, real sandboxes.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Client } from '@modelcontextprotocol/client';
import { callOk, connectHttp } from '../helpers/clients.js';
import { runCli, startServe, tempProject } from '../helpers/paddock-process.js';
import { pollUntil } from '../helpers/poll.js';

const CONFIG = 'computer:\n  defaultProfile: shell\n';

async function running(client: Client): Promise<void> {
  await pollUntil(
    async () => (await callOk(client, 'get_computer_status', {})).lifecycle === 'running',
    'the computer to run',
    60_000,
  );
}

async function sh(client: Client, script: string): Promise<string> {
  const r = await callOk(client, 'run_command', { script, waitMs: 10_000 });
  assert.equal(r.exitCode, 0, `${script}: ${String(r.stderr)}`);
  return String(r.stdout);
}

describe('named computers across restarts (paddock serve)', () => {
  it('a named computer’s files come back after `paddock stop` and after the server is killed', async () => {
    const project = tempProject(CONFIG);
    try {
      let serve = await startServe(project);
      let client = await connectHttp(serve.url, serve.token, 'keep', { computer: 'notes' });
      await callOk(client, 'launch_computer', { profileId: 'shell' });
      await running(client);
      await sh(
        client,
        'mkdir -p /workspace/notes && echo first > /workspace/notes/a.md && ln -s a.md /workspace/notes/latest',
      );
      await client.close();
      const stopped = await runCli(project, ['stop']);
      assert.equal(stopped.code, 0, stopped.stderr);
      assert.equal(await serve.stop(), 0);

      serve = await startServe(project);
      client = await connectHttp(serve.url, serve.token, 'keep', { computer: 'notes' });
      const back = await callOk(client, 'launch_computer', { profileId: 'shell' });
      assert.match(String(back.restoredFrom), /^ck_/, 'it boots from the checkpoint taken as it stopped');
      await running(client);
      await pollUntil(
        async () => (await sh(client, 'cat /workspace/notes/latest 2>/dev/null; true')) === 'first\n',
        'the files back after paddock stop',
        30_000,
      );

      // a crash: what was checkpointed before it comes back, later changes are lost with it
      await sh(client, 'echo second > /workspace/notes/b.md');
      const saved = await callOk(client, 'checkpoint_computer', { label: 'before the crash' });
      await sh(client, 'echo unsaved > /workspace/notes/c.md');
      serve.child.kill('SIGKILL');
      await serve.stop().catch(() => null);
      await client.close().catch(() => undefined);

      serve = await startServe(project);
      client = await connectHttp(serve.url, serve.token, 'keep', { computer: 'notes' });
      const again = await callOk(client, 'launch_computer', { profileId: 'shell' });
      assert.equal(
        again.restoredFrom,
        saved.checkpointId,
        'it boots from the latest checkpoint before the crash',
      );
      await running(client);
      await pollUntil(
        async () => (await sh(client, 'ls /workspace/notes 2>/dev/null; true')) === 'a.md\nb.md\nlatest\n',
        'the checkpointed files back after the crash',
        30_000,
      );
      await client.close();
      await serve.stop();
    } finally {
      project.cleanup();
    }
  });
});
