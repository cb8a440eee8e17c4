import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { packageBin } from '../fixtures/mcp/harness.js';
import { connectHttp } from '../helpers/clients.js';
import { startServe, type TempProject, tempProject } from '../helpers/paddock-process.js';

/** A project whose only upstream server is the real server-everything, with a fresh data dir. */
function everythingProject(startup: 'eager' | 'lazy'): TempProject {
  const project = tempProject('computer:\n  autoLaunch: false\n');
  mkdirSync(join(project.dir, '.paddock'));
  writeFileSync(
    join(project.dir, '.paddock', 'mcp_servers.yaml'),
    [
      'mcpServers:',
      '  everything:',
      `    command: ${JSON.stringify(process.execPath)}`,
      `    args: [${JSON.stringify(packageBin('@modelcontextprotocol/server-everything'))}]`,
      `    startup: ${startup}`,
      // a slow machine may need long to start it; the wait follows the server's own bound
      '    timeoutMs: 120000',
      '    permissions:',
      '      echo: auto',
    ].join('\n'),
  );
  return project;
}

describe('cold start of upstream servers', () => {
  it('lists the configured servers’ tools in the very first tools/list after a start with a fresh data dir', async () => {
    const project = everythingProject('eager');
    const serve = await startServe(project);
    try {
      const client = await connectHttp(serve.url, serve.token);
      const { tools } = await client.listTools();
      assert.ok(
        tools.some((t) => t.name === 'everything_echo'),
        `first listing: ${tools.map((t) => t.name).join(', ')}`,
      );
      await client.close();
    } finally {
      await serve.stop('SIGKILL');
      project.cleanup();
    }
  });

  it('answers a call to a configured server’s tool made at once after the start, without listing first', async () => {
    const project = everythingProject('lazy');
    const serve = await startServe(project);
    try {
      const client = await connectHttp(serve.url, serve.token);
      const r = await client.callTool({ name: 'everything_echo', arguments: { message: 'cold-42' } });
      assert.notEqual(r.isError, true, JSON.stringify(r.content));
      assert.match(JSON.stringify(r.content), /cold-42/);
      await client.close();
    } finally {
      await serve.stop('SIGKILL');
      project.cleanup();
    }
  });
});
