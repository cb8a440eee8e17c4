import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import {
  runCli,
  type ServeProcess,
  startServe,
  type TempProject,
  tempProject,
} from '../helpers/paddock-process.js';

async function connect(url: string, token: string, scheme = 'Bearer'): Promise<Client> {
  const client = new Client({ name: 'paddock-test', version: '1.0.0' });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(`${url}/mcp`), {
      requestInit: { headers: { authorization: `${scheme} ${token}` } },
    }),
  );
  return client;
}

const INIT = JSON.stringify({
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
});

describe('MCP over Streamable HTTP against a real paddock serve', () => {
  let project: TempProject;
  let serve: ServeProcess;
  let client: Client;
  let site: Server;
  let sitePort: number;

  before(async () => {
    site = createServer((req, res) => {
      let body = '';
      req.on('data', (d: Buffer) => {
        body += d.toString();
      });
      req.on('end', () => {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ method: req.method, body }));
      });
    });
    await new Promise<void>((resolve) => site.listen(0, '127.0.0.1', resolve));
    sitePort = (site.address() as AddressInfo).port;
    project = tempProject(
      `policy:\n  http:\n    allow: ["127.0.0.1:${sitePort}"]\nnotify:\n  channels:\n    journal: { type: log }\n`,
    );
    serve = await startServe(project);
    client = await connect(serve.url, serve.token);
  });

  after(async () => {
    await client?.close().catch(() => {});
    await serve?.stop();
    project?.cleanup();
    site?.close();
  });

  it('calls each built-in that needs no computer over HTTP, the allowed host included', async () => {
    const ok = async (name: string, args: Record<string, unknown>) => {
      const r = await client.callTool({ name, arguments: args });
      assert.notEqual(r.isError, true, `${name}: ${JSON.stringify(r.content)}`);
      return r.structuredContent as Record<string, unknown>;
    };
    const got = await ok('http_get', { url: `http://127.0.0.1:${sitePort}/x` });
    assert.equal(got.status, 200);
    assert.match(String(got.body), /"method":"GET"/);
    const posted = await ok('http_post', { url: `http://127.0.0.1:${sitePort}/y`, body: 'payload-1' });
    assert.match(String(posted.body), /payload-1/);
    await ok('save_memory', { content: 'over http, every built-in' });
    assert.match(JSON.stringify(await ok('recall_memory', { query: 'every built-in' })), /every built-in/);
    await ok('notify', { channel: 'journal', message: 'hello' });
  });

  it('creates a token on first start and prints it once', () => {
    assert.ok(serve.token.length >= 32);
    assert.ok(serve.stdout().includes(serve.token));
  });

  it('lists tools and calls a built-in through the gateway', async () => {
    const { tools } = await client.listTools();
    assert.ok(tools.some((t) => t.name === 'save_memory'));
    const r = await client.callTool({ name: 'save_memory', arguments: { content: 'over http' } });
    assert.notEqual(r.isError, true, JSON.stringify(r));
    assert.ok(r.structuredContent);
  });

  it('answers schema-invalid arguments as a tool error and an unknown tool as a JSON-RPC error', async () => {
    const r = await client.callTool({ name: 'recall_memory', arguments: { query: 'x', limit: 100000 } });
    assert.equal(r.isError, true);
    const body = JSON.parse((r.content as { text: string }[])[0]!.text);
    assert.equal(body.code, 'INVALID_ARGUMENT');
    assert.match(body.message, /limit/);
    assert.ok(
      (body.problems as string[]).some((p) => p.startsWith('limit: ')),
      JSON.stringify(body.problems),
    );
    await assert.rejects(
      client.callTool({ name: 'nope', arguments: {} }),
      (e: Error & { code?: number }) => e.code === -32602 && /Unknown tool/.test(e.message),
    );
  });

  it('refuses a request without the token', async () => {
    const res = await fetch(`${serve.url}/mcp`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: INIT,
    });
    assert.equal(res.status, 401);
  });

  it('accepts the bearer scheme in any case, and refuses another scheme with the right token', async () => {
    for (const scheme of ['bearer', 'BEARER']) {
      const c = await connect(serve.url, serve.token, scheme);
      try {
        const { tools } = await c.listTools();
        assert.ok(
          tools.some((t) => t.name === 'save_memory'),
          scheme,
        );
      } finally {
        await c.close();
      }
    }
    for (const authorization of [`Basic ${serve.token}`, `Bearer${serve.token}`, `Bearer ${serve.token} x`]) {
      const res = await fetch(`${serve.url}/mcp`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          authorization,
        },
        body: INIT,
      });
      assert.equal(res.status, 401, authorization);
    }
  });

  it('refuses a request with a wrong token', async () => {
    const res = await fetch(`${serve.url}/mcp`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        authorization: 'Bearer nope',
      },
      body: INIT,
    });
    assert.equal(res.status, 401);
  });

  it('refuses a foreign Origin even with the token (DNS rebinding, cross-site)', async () => {
    const res = await fetch(`${serve.url}/mcp`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        authorization: `Bearer ${serve.token}`,
        origin: 'http://evil.example',
      },
      body: INIT,
    });
    assert.equal(res.status, 403);
  });

  it('produces exactly one audit row per call for 1,000 concurrent calls', async () => {
    const marker = `burst-${Date.now()}`;
    const clients = await Promise.all(Array.from({ length: 8 }, () => connect(serve.url, serve.token)));
    try {
      await Promise.all(
        Array.from({ length: 1000 }, (_, i) =>
          clients[i % clients.length]!.callTool({
            name: 'recall_memory',
            arguments: { query: marker, limit: 1 },
          }),
        ),
      );
    } finally {
      await Promise.all(clients.map((c) => c.close()));
    }
    const res = await runCli(project, ['audit', '--tool', 'recall_memory', '--json', '--limit', '10000']);
    assert.equal(res.code, 0, res.stderr);
    const rows = res.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { input: string });
    assert.equal(rows.filter((r) => r.input.includes(marker)).length, 1000);
  });
});

describe('audit durability across a killed server', () => {
  it('keeps the row of a call answered right before SIGKILL', async () => {
    const project = tempProject();
    let serve: ServeProcess | undefined;
    try {
      serve = await startServe(project);
      const client = await connect(serve.url, serve.token);
      const marker = `durable-${Date.now()}`;
      const r = await client.callTool({ name: 'save_memory', arguments: { content: marker } });
      assert.notEqual(r.isError, true);
      await serve.stop('SIGKILL');
      const res = await runCli(project, ['audit', '--tool', 'save_memory', '--json']);
      assert.equal(res.code, 0, res.stderr);
      assert.ok(res.stdout.includes(marker), `row missing after SIGKILL: ${res.stdout}`);
    } finally {
      await serve?.stop('SIGKILL');
      project.cleanup();
    }
  });
});
