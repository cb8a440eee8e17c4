/**
 * `paddock computers list | stop | rm` against a real server, its real sandboxes and a stdio
 * bridge attached to a named computer that keeps its workspace.
 */
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { connectHttp, connectStdio } from '../helpers/clients.js';
import { runCli, startServe, tempProject } from '../helpers/paddock-process.js';
import { pollUntil } from '../helpers/poll.js';

const CONFIG = `computer:
  defaultProfile: shell
  named:
    keepbox:
      workspace: keep
`;

interface Row {
  name: string;
  lifecycle: string;
  workspace: string;
  diskBytes: number | null;
}

async function list(
  project: ReturnType<typeof tempProject>,
): Promise<{ serverRunning: boolean; computers: Row[] }> {
  const r = await runCli(project, ['computers', 'list', '--json']);
  assert.equal(r.code, 0, r.stderr);
  return JSON.parse(r.stdout);
}

describe('paddock computers', () => {
  it('lists every computer with its kept workspace size, stops one, and removes one with its workspace', async () => {
    const project = tempProject(CONFIG);
    const serve = await startServe(project);
    const named = await connectStdio(project, 'named', ['--computer', 'keepbox']);
    const other = await connectHttp(serve.url, serve.token);
    try {
      const wrote = await named.callTool({
        name: 'run_command',
        arguments: {
          script: 'head -c 1048576 /dev/urandom > /workspace/kept.bin && echo done',
          waitMs: 10_000,
        },
      });
      assert.match(JSON.stringify(wrote.structuredContent), /done/);
      await other.callTool({ name: 'run_command', arguments: { script: 'true', waitMs: 10_000 } });

      const listed = await list(project);
      assert.equal(listed.serverRunning, true);
      const keepbox = listed.computers.find((c) => c.name === 'named:keepbox');
      assert.ok(keepbox, `keepbox is listed: ${JSON.stringify(listed)}`);
      assert.equal(keepbox.workspace, 'keep');
      assert.ok((keepbox.diskBytes ?? 0) >= 1024 * 1024, 'its kept workspace holds the file');
      const fresh = listed.computers.find((c) => c.name.startsWith('private:'));
      assert.ok(fresh, 'the HTTP session has a private computer');
      assert.equal(fresh.workspace, 'fresh');
      assert.equal(fresh.diskBytes, null);
      const table = await runCli(project, ['computers', 'list']);
      // the host space its workspace takes: the file, plus its disk's own metadata where it has one
      assert.match(table.stdout, /named:keepbox\s+shell\s+running\s+\S+\s+keep\s+\d\.\d MiB/);

      const stopped = await runCli(project, ['computers', 'stop', 'keepbox']);
      assert.equal(stopped.code, 0, stopped.stderr);
      assert.equal(
        (await list(project)).computers.find((c) => c.name === 'named:keepbox')?.lifecycle,
        'stopped',
      );
      const again = await runCli(project, ['computers', 'stop', 'keepbox']);
      assert.notEqual(again.code, 0);
      assert.match(again.stderr, /No running computer "keepbox"/);

      const dir = join(project.dataDir, 'workspaces', 'named-keepbox');
      assert.ok(existsSync(dir));
      const removed = await runCli(project, ['computers', 'rm', 'keepbox']);
      assert.equal(removed.code, 0, removed.stderr);
      assert.match(removed.stdout, /Removed keepbox \(freed \d\.\d MiB\)/);
      assert.ok(!existsSync(dir), 'the kept workspace is gone');
      assert.ok(!(await list(project)).computers.some((c) => c.name === 'named:keepbox'));
      // the other session's computer was never touched
      const still = await other.callTool({ name: 'get_computer_status', arguments: {} });
      assert.equal((still.structuredContent as { lifecycle: string }).lifecycle, 'running');
    } finally {
      await named.close().catch(() => undefined);
      await other.close().catch(() => undefined);
      await serve.stop();
    }
    try {
      // with no server: the kept workspaces on disk are what is listed, and rm works on them
      const serve2 = await startServe(project);
      const again = await connectStdio(project, 'named', ['--computer', 'keepbox']);
      await again.callTool({
        name: 'run_command',
        arguments: { script: 'echo x > /workspace/x', waitMs: 10_000 },
      });
      await again.close();
      await serve2.stop();
      await pollUntil(async () => !(await list(project)).serverRunning, 'the server to be gone');
      const offline = await list(project);
      assert.deepEqual(
        offline.computers.map((c) => [c.name, c.lifecycle, c.workspace]),
        [['named:keepbox', 'stopped', 'keep']],
      );
      const rm = await runCli(project, ['computers', 'rm', 'keepbox']);
      assert.equal(rm.code, 0, rm.stderr);
      assert.deepEqual((await list(project)).computers, []);
    } finally {
      project.cleanup();
    }
  });

  it('refuses a name that is not a computer name before touching the disk', async () => {
    const project = tempProject(CONFIG);
    try {
      for (const name of ['../../etc', 'named:../x', 'UPPER', '']) {
        const r = await runCli(project, ['computers', 'rm', name]);
        assert.notEqual(r.code, 0, `rm ${JSON.stringify(name)} fails`);
        if (name !== '') assert.match(r.stderr, /not a valid computer name/);
      }
      const stop = await runCli(project, ['computers', 'stop', 'keepbox']);
      assert.notEqual(stop.code, 0);
      assert.match(stop.stderr, /No Paddock server runs/);
    } finally {
      project.cleanup();
    }
  });
});
