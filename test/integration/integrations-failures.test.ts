import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { McpClientPool } from '../../src/integrations/client-pool.js';
import type { McpServerConfig } from '../../src/integrations/load-config.js';
import { loadPlugins } from '../../src/integrations/plugins.js';
import { IntegrationsService, type ToolsChangedEvent } from '../../src/integrations/service.js';
import { PaddockError } from '../../src/shared/errors.js';
import { createLogger, silentLogger } from '../../src/shared/logger.js';
import type { ToolResult } from '../../src/tools/tool.js';
import { freePort } from '../fixtures/mcp/everything-http.js';
import { fixturePath, pidAlive, readRecord, toolContext } from '../fixtures/mcp/harness.js';
import { type HttpFixture, startHttpFixture } from '../fixtures/mcp/http-server.js';
import { pollUntil } from '../helpers/poll.js';

const base = { enabled: true, timeoutMs: 30_000, permissions: {}, toolsets: [], startup: 'lazy' as const };

function stdio(
  name: string,
  mode: string,
  extra: Partial<McpServerConfig> = {},
  record?: string,
): McpServerConfig {
  const args = [fixturePath('stdio-server'), '--mode', mode, ...(record ? ['--record', record] : [])];
  return {
    ...base,
    name,
    prefix: name,
    transport: 'stdio',
    command: process.execPath,
    args,
    env: {},
    ...extra,
  } as McpServerConfig;
}

function upstream(e: unknown, pattern: RegExp): boolean {
  return e instanceof PaddockError && e.code === 'UPSTREAM_ERROR' && pattern.test(e.message);
}

describe('upstream failures stay contained', () => {
  let root: string;
  let record: string;
  let httpFixture: HttpFixture;
  let service: IntegrationsService;
  const logLines: string[] = [];
  const events: ToolsChangedEvent[] = [];

  const call = async (
    name: string,
    input: Record<string, unknown> = {},
    timeoutMs = 20_000,
  ): Promise<ToolResult> => {
    const tool = service.tools().find((t) => t.name === name);
    assert.ok(tool, `tool ${name} is registered`);
    const ctx = toolContext(timeoutMs);
    try {
      return await tool.execute(input, ctx);
    } finally {
      ctx.dispose();
    }
  };
  const status = (name: string) => service.servers().find((s) => s.name === name)!;

  before(async () => {
    root = mkdtempSync(join(tmpdir(), 'paddock-fail-'));
    record = join(root, 'fx.jsonl');
    httpFixture = await startHttpFixture();
    mkdirSync(join(root, 'plugins'));
    writeFileSync(
      join(root, 'plugins', 'clash.mjs'),
      `import { z } from ${JSON.stringify(import.meta.resolve('zod'))};
export const t = { name: 'fx_structured', description: 'Collides with an upstream tool.', input: z.object({}), execute: () => 'plugin' };\n`,
    );
    service = new IntegrationsService({
      servers: [
        stdio('fx', 'normal', {}, record),
        stdio('dead', 'exit-at-start'),
        stdio('mute', 'no-initialize', { timeoutMs: 400 }),
        { ...base, name: 'httpfx', prefix: 'httpfx', transport: 'http', url: httpFixture.url, headers: {} },
        {
          ...base,
          name: 'gone',
          prefix: 'gone',
          transport: 'http',
          url: `http://127.0.0.1:${await freePort()}/mcp`,
          headers: {},
        },
      ],
      plugins: await loadPlugins(join(root, 'plugins'), silentLogger()),
      logger: createLogger({ level: 'debug', write: (l) => logLines.push(l) }),
      pool: { backoff: { initialMs: 100, maxMs: 400 }, shutdownGraceMs: 300 },
    });
    service.onToolsChanged((e) => events.push(e));
  });

  after(async () => {
    await service?.close();
    await httpFixture?.close();
    rmSync(root, { recursive: true, force: true });
  });

  test('servers that exit at start, never answer initialize or cannot be reached fail alone, naming the cause', async () => {
    await service.start();
    await service.discovered();
    assert.equal(status('fx').state, 'idle', 'a lazy server is stopped after listing its tools');
    assert.equal(status('httpfx').toolCount, 2);
    // discovery stops waiting at its own deadline; on a busy machine a failing server's own
    // verdict (its exit, its initialize timeout counted from its spawn) may come after that
    for (const name of ['dead', 'mute', 'gone']) {
      await pollUntil(() => status(name).lastError, `server ${name} to fail`, 30_000);
    }
    assert.match(
      status('dead').lastError ?? '',
      /exited during initialize \(last stderr line: "fatal: FIXTURE_TOKEN is not set"\)/,
    );
    assert.match(status('mute').lastError ?? '', /did not answer initialize within 400 ms/);
    assert.match(status('gone').lastError ?? '', /fetch failed|ECONNREFUSED/);
    for (const name of ['dead', 'mute', 'gone']) {
      assert.equal(service.tools().filter((t) => t.source === `mcp:${name}`).length, 0);
    }
    assert.deepEqual(await call('fx_echo', { message: 'still fine' }), {
      content: [{ type: 'text', text: 'echo: still fine' }],
    });
  });

  test('a call to a server that cannot start is UPSTREAM_ERROR naming it, well before a long deadline', async () => {
    for (const server of ['dead', 'mute', 'gone']) {
      await assert.rejects(
        service.pool.callTool(server, 'anything', {}, { deadline: Date.now() + 60_000 }),
        (e: unknown) => upstream(e, new RegExp(`MCP server "${server}"`)),
      );
    }
  });

  test('a server keeps its stderr lines for `servers logs` and sends them to the logger', () => {
    assert.ok(service.logs('dead').includes('fatal: FIXTURE_TOKEN is not set'));
    assert.ok(
      logLines.some(
        (l) => l.includes('mcp.stderr') && l.includes('server="dead"') && l.includes('FIXTURE_TOKEN'),
      ),
    );
  });

  test('a hanging call ends at the deadline with UPSTREAM_ERROR and the server receives notifications/cancelled', async () => {
    await assert.rejects(call('fx_hang', {}, 600), (e: unknown) =>
      upstream(e, /did not answer tool "hang" within/),
    );
    const sent = readRecord(record).find(
      (m) => m.method === 'tools/call' && (m.params as { name?: string }).name === 'hang',
    );
    assert.ok(sent, 'the call reached the server');
    const cancelled = await pollUntil(
      () =>
        readRecord(record).find(
          (m) =>
            m.method === 'notifications/cancelled' &&
            (m.params as { requestId?: unknown }).requestId === sent.id,
        ),
      'notifications/cancelled for the hanging request',
    );
    assert.ok(cancelled);
  });

  test('a call cancelled by the caller is TIMEOUT and is cancelled upstream too', async () => {
    const tool = service.tools().find((t) => t.name === 'fx_hang')!;
    const ctx = toolContext(60_000);
    const before = readRecord(record).filter((m) => m.method === 'tools/call').length;
    try {
      const pending = tool.execute({}, ctx);
      const sent = await pollUntil(
        () => readRecord(record).filter((m) => m.method === 'tools/call')[before],
        'the call to reach the server',
      );
      ctx.cancel();
      await assert.rejects(pending, (e: unknown) => e instanceof PaddockError && e.code === 'TIMEOUT');
      await pollUntil(
        () =>
          readRecord(record).some(
            (m) =>
              m.method === 'notifications/cancelled' &&
              (m.params as { requestId?: unknown }).requestId === sent.id,
          ),
        'notifications/cancelled',
      );
    } finally {
      ctx.dispose();
    }
  });

  test('a malformed result is UPSTREAM_ERROR saying what is wrong', async () => {
    await assert.rejects(call('fx_malformed'), (e: unknown) =>
      upstream(e, /malformed result for tool "malformed" \(content: /),
    );
  });

  test('an upstream isError result passes through as isError', async () => {
    assert.deepEqual(await call('fx_fail'), { content: [{ type: 'text', text: 'it broke' }], isError: true });
  });

  test('a 50 MB result over stdio is refused with UPSTREAM_ERROR and the server is restarted', async () => {
    const restarts = status('fx').restarts;
    await assert.rejects(call('fx_big', { megabytes: 50 }, 120_000), (e: unknown) =>
      upstream(e, /exceeded the 10 MiB result limit/),
    );
    assert.deepEqual(await call('fx_echo', { message: 'after' }), {
      content: [{ type: 'text', text: 'echo: after' }],
    });
    assert.equal(status('fx').restarts, restarts + 1);
  });

  test('a 50 MB result over HTTP is refused with UPSTREAM_ERROR and the next call reconnects', async () => {
    await assert.rejects(call('httpfx_big', { megabytes: 50 }, 120_000), (e: unknown) =>
      upstream(e, /"httpfx".*exceeded the 10 MiB result limit/),
    );
    assert.deepEqual(await call('httpfx_echo', { message: 'again' }), {
      content: [{ type: 'text', text: 'echo: again' }],
    });
  });

  test('a server that crashes during a call fails that call and serves the next one', async () => {
    await assert.rejects(call('fx_crash'), (e: unknown) => upstream(e, /closed during tool "crash"/));
    assert.deepEqual(await call('fx_echo', { message: 'back' }), {
      content: [{ type: 'text', text: 'echo: back' }],
    });
    assert.ok(service.logs('fx').includes('crashing on purpose'));
  });

  test('tools/list_changed from a server updates the tools and emits a change', async () => {
    const seen = events.length;
    await call('fx_add_tool');
    await pollUntil(() => service.tools().some((t) => t.name === 'fx_added_tool'), 'fx_added_tool to appear');
    assert.ok(events.slice(seen).some((e) => e.changedSources.includes('mcp:fx')));
  });

  test('a tool name claimed by an upstream server and a plugin is registered for neither, naming both', () => {
    assert.ok(!service.tools().some((t) => t.name === 'fx_structured'));
    const message = status('fx').lastError ?? '';
    assert.match(message, /"fx_structured" is claimed by mcp:fx \(tool "structured"\) and plugin:clash/);
    assert.match(service.plugins()[0]?.error ?? '', /fx_structured/);
  });
});

describe('tool name collisions', () => {
  test('two upstream tools with the same full name are both left out, and both servers name both sources', async () => {
    // fx lists add_tool → fx_add_tool; fx_add lists tool → fx_add_tool
    const service = new IntegrationsService({
      servers: [
        stdio('fx', 'normal'),
        {
          ...stdio('fx_add', 'normal'),
          args: [fixturePath('stdio-server'), '--mode', 'normal', '--tool', 'tool'],
        } as McpServerConfig,
      ],
      logger: silentLogger(),
    });
    try {
      await service.start();
      await service.discovered();
      const names = service.tools().map((t) => t.name);
      assert.ok(!names.includes('fx_add_tool'));
      assert.ok(names.includes('fx_echo') && names.includes('fx_add_echo'), 'the other tools stay');
      for (const server of ['fx', 'fx_add']) {
        assert.match(
          service.servers().find((s) => s.name === server)?.lastError ?? '',
          /"fx_add_tool" is claimed by mcp:fx \(tool "add_tool"\) and mcp:fx_add \(tool "tool"\)/,
        );
      }
    } finally {
      await service.close();
    }
  });
});

describe('shutdown', () => {
  test('close() kills a server that ignores stdin EOF and SIGTERM, and the helper process it started', async () => {
    const root = mkdtempSync(join(tmpdir(), 'paddock-stubborn-'));
    const record = join(root, 'rec.jsonl');
    const pool = new McpClientPool([stdio('stubborn', 'stubborn', {}, record)], {
      logger: silentLogger(),
      shutdownGraceMs: 200,
    });
    try {
      await pool.start('stubborn');
      const entry = await pollUntil(
        () => readRecord(record).find((m) => Array.isArray(m.pids)),
        'the fixture pids',
      );
      const pids = entry.pids as number[];
      assert.equal(pids.length, 2);
      assert.ok(pids.every(pidAlive));
      await pool.close();
      assert.deepEqual(pids.filter(pidAlive), []);
      assert.equal(pool.status('stubborn').state, 'idle', 'a closed server is idle, not failed');
    } finally {
      await pool.close();
      rmSync(root, { recursive: true, force: true });
    }
  });
});
