import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { processAlive } from '../../src/mcp/instance.js';
import { connectStdio } from '../helpers/clients.js';
import { startServe, tempProject } from '../helpers/paddock-process.js';
import { pollUntil } from '../helpers/poll.js';

const IDLE_CONFIG = 'mcp:\n  idleExitSeconds: 1\ncomputer:\n  autoLaunch: false\n';

function serverPid(dataDir: string): number {
  return (JSON.parse(readFileSync(join(dataDir, 'run', 'server.json'), 'utf8')) as { pid: number }).pid;
}

describe('a server that paddock mcp started ends when nothing uses it', () => {
  it('exits once its last client is gone for mcp.idleExitSeconds, while a server started with paddock serve keeps running', async () => {
    const bridged = tempProject(IDLE_CONFIG);
    const served = tempProject(IDLE_CONFIG);
    const serve = await startServe(served);
    try {
      const client = await connectStdio(bridged, 'idle-test');
      const pid = serverPid(bridged.dataDir);
      const listed = await client.callTool({ name: 'list_profiles', arguments: {} });
      assert.notEqual(listed.isError, true);
      // in use: a client is connected (the watch sees a session until the bridge closes)
      assert.ok(processAlive(pid));
      await client.close();
      await pollUntil(() => !processAlive(pid), 'the idle background server to exit', 30_000);
      // the peer, idle as long and configured alike, was started by a person: it stays
      assert.equal(serve.child.exitCode, null);
      assert.equal(serve.child.signalCode, null);
      const log = readFileSync(join(bridged.dataDir, 'logs', 'serve.log'), 'utf8');
      assert.match(log, /server\.idle_exit/);
    } finally {
      await serve.stop();
      bridged.cleanup();
      served.cleanup();
    }
  });
});
