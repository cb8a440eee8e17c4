import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { type LoadedMcpServers, loadMcpServers } from '../../src/integrations/load-config.js';
import { IntegrationsService } from '../../src/integrations/service.js';
import { silentLogger } from '../../src/shared/logger.js';
import type { Tool } from '../../src/tools/tool.js';
import { startEverythingHttp } from '../fixtures/mcp/everything-http.js';
import { packageBin, pidAlive, toolContext } from '../fixtures/mcp/harness.js';
import { pollUntil } from '../helpers/poll.js';

const CONFIG = `
mcpServers:
  everything:
    command: \${NODE}
    args: ["\${EVERYTHING_BIN}", "stdio"]
    startup: eager
    toolsets: [demo]
    permissions:
      echo: auto
      "get-*": deny
  filesystem:
    command: \${NODE}
    args: ["\${FILESYSTEM_BIN}", "\${WORKDIR}"]
  everything-http:
    type: http
    url: \${EVERYTHING_URL}
`;

describe('community MCP servers as Paddock tools', () => {
  let root: string;
  let workdir: string;
  let loaded: LoadedMcpServers;
  let service: IntegrationsService;
  let http: Awaited<ReturnType<typeof startEverythingHttp>>;
  const tool = (name: string): Tool => {
    const t = service.tools().find((x) => x.name === name);
    assert.ok(
      t,
      `tool ${name} is registered (have: ${service
        .tools()
        .map((x) => x.name)
        .join(', ')})`,
    );
    return t;
  };
  const call = async (name: string, input: Record<string, unknown>) => {
    const ctx = toolContext(20_000);
    try {
      return await tool(name).execute(input, ctx);
    } finally {
      ctx.dispose();
    }
  };

  before(async () => {
    root = mkdtempSync(join(tmpdir(), 'paddock-int-'));
    workdir = join(root, 'work');
    mkdirSync(join(root, '.paddock'));
    mkdirSync(workdir);
    writeFileSync(join(root, '.paddock', 'mcp_servers.yaml'), CONFIG);
    http = await startEverythingHttp();
    loaded = loadMcpServers(join(root, '.paddock'), {
      NODE: process.execPath,
      EVERYTHING_BIN: packageBin('@modelcontextprotocol/server-everything'),
      FILESYSTEM_BIN: packageBin('@modelcontextprotocol/server-filesystem'),
      WORKDIR: workdir,
      EVERYTHING_URL: http.url,
    });
    service = new IntegrationsService({
      servers: loaded.servers,
      logger: silentLogger(),
      toolCacheFile: join(root, 'data', 'mcp-tools.json'),
      pool: { backoff: { initialMs: 100 } },
    });
  });

  after(async () => {
    await service?.close();
    await http?.stop();
    rmSync(root, { recursive: true, force: true });
  });

  test('start() returns while servers are still starting', async () => {
    await service.start();
    assert.equal(service.servers().find((s) => s.name === 'everything')?.state, 'starting');
    await service.discovered();
  });

  test('registers the tools of every server as <server>_<tool>', () => {
    const names = service.tools().map((t) => t.name);
    for (const expected of [
      'everything_echo',
      'everything_get_structured_content',
      'filesystem_read_text_file',
      'filesystem_list_directory',
      'everything_http_echo',
    ]) {
      assert.ok(names.includes(expected), `${expected} in ${names.join(', ')}`);
    }
    assert.ok(names.every((n) => /^[a-z0-9_]{1,64}$/.test(n)));
  });

  test('keeps description, schemas and annotations, and tags source and tool sets', () => {
    const echo = tool('everything_echo');
    assert.equal(echo.source, 'mcp:everything');
    assert.deepEqual(echo.toolsets, ['integrations', 'everything', 'demo']);
    assert.equal(echo.title, 'Echo Tool');
    assert.match(echo.description, /echo/i);
    assert.equal(echo.annotations.readOnlyHint, true);
    assert.deepEqual(Object.keys(echo.inputSchema.properties as object), ['message']);
    assert.ok(tool('everything_get_structured_content').outputSchema);
    assert.equal(tool('filesystem_read_text_file').source, 'mcp:filesystem');
    assert.deepEqual(tool('everything_http_echo').toolsets, ['integrations', 'everything-http']);
  });

  test('a lazy server is started only to list its tools, then stopped; an eager one keeps running', async () => {
    const fs = service.servers().find((s) => s.name === 'filesystem');
    assert.equal(fs?.state, 'idle');
    assert.equal(fs?.pid, null);
    assert.ok((fs?.toolCount ?? 0) > 5);
    const everything = service.servers().find((s) => s.name === 'everything');
    assert.equal(everything?.state, 'ready');
    assert.ok(everything?.pid && pidAlive(everything.pid));
  });

  test('calls return the upstream results over stdio and Streamable HTTP', async () => {
    assert.deepEqual(await call('everything_echo', { message: 'hi' }), {
      content: [{ type: 'text', text: 'Echo: hi' }],
    });
    assert.deepEqual(await call('everything_http_echo', { message: 'over http' }), {
      content: [{ type: 'text', text: 'Echo: over http' }],
    });
    const weather = await call('everything_get_structured_content', { location: 'Chicago' });
    assert.equal(typeof weather.structured?.temperature, 'number');
  });

  test('the filesystem server reads a file of its root on first use', async () => {
    writeFileSync(join(workdir, 'notes.md'), '# hello from the workspace\n');
    const result = await call('filesystem_read_text_file', { path: join(workdir, 'notes.md') });
    assert.match(JSON.stringify(result.content), /hello from the workspace/);
    assert.equal(service.servers().find((s) => s.name === 'filesystem')?.state, 'ready');
  });

  test('an error reported by the upstream tool comes back as isError, not as an exception', async () => {
    const result = await call('filesystem_read_text_file', { path: '/etc/hostname' });
    assert.equal(result.isError, true);
    assert.match(JSON.stringify(result.content), /denied|outside|not allowed/i);
  });

  test('per-server permissions become rules over full tool names', () => {
    assert.deepEqual(service.permissionRules(), [
      {
        pattern: 'everything_echo',
        permission: 'auto',
        source: 'mcp:everything',
        origin: 'mcp_servers.yaml#everything',
      },
      {
        pattern: 'everything_get_*',
        permission: 'deny',
        source: 'mcp:everything',
        origin: 'mcp_servers.yaml#everything',
      },
    ]);
  });

  test('a stdio server killed mid-session is restarted and the next call succeeds', async () => {
    const before = service.servers().find((s) => s.name === 'everything')!;
    assert.ok(before.pid);
    process.kill(before.pid, 'SIGKILL');
    await pollUntil(() => !pidAlive(before.pid!), 'the server to die');
    assert.deepEqual(await call('everything_echo', { message: 'again' }), {
      content: [{ type: 'text', text: 'Echo: again' }],
    });
    const now = service.servers().find((s) => s.name === 'everything')!;
    assert.equal(now.restarts, before.restarts + 1);
    assert.notEqual(now.pid, before.pid);
    assert.match(now.lastError ?? '', /exited unexpectedly/);
  });

  test('close() shuts every server down and leaves no process behind', async () => {
    const pids = service
      .servers()
      .map((s) => s.pid)
      .filter((p): p is number => p !== null);
    assert.ok(pids.length >= 2, 'everything and filesystem run');
    await service.close();
    assert.deepEqual(
      pids.filter((p) => pidAlive(p)),
      [],
    );
    assert.ok(service.servers().every((s) => s.pid === null));
  });

  test('a new run registers a lazy server from the tool cache without starting it', async () => {
    const again = new IntegrationsService({
      servers: loaded.servers.filter((s) => s.name === 'filesystem'),
      logger: silentLogger(),
      toolCacheFile: join(root, 'data', 'mcp-tools.json'),
    });
    try {
      await again.start();
      const [fs] = again.servers();
      assert.equal(fs?.toolsFrom, 'cache');
      assert.equal(fs?.state, 'idle');
      assert.ok(again.tools().some((t) => t.name === 'filesystem_list_directory'));
      const ctx = toolContext(20_000);
      try {
        const listing = await again
          .tools()
          .find((t) => t.name === 'filesystem_list_directory')!
          .execute({ path: workdir }, ctx);
        assert.match(JSON.stringify(listing.content), /notes\.md/);
      } finally {
        ctx.dispose();
      }
      assert.equal(again.servers()[0]?.toolsFrom, 'live');
    } finally {
      await again.close();
    }
  });
});
