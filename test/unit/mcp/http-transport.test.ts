import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { policySchema } from '../../../src/config/schema.js';
import { McpHttpEndpoint } from '../../../src/mcp/http.js';
import { createWhitelistSandbox } from '../../../src/policy/index.js';
import { silentLogger } from '../../../src/shared/logger.js';
import { SqliteAuditStore } from '../../../src/store/sqlite/audit-store.js';
import { openDatabase } from '../../../src/store/sqlite/database.js';
import { Gateway } from '../../../src/tools/gateway.js';
import { PermissionPolicy } from '../../../src/tools/permissions.js';
import { ToolRegistry } from '../../../src/tools/registry.js';
import type { Tool } from '../../../src/tools/tool.js';
import { InputValidator } from '../../../src/tools/validation.js';

const VERSION = '2025-06-18';
const ACCEPT = 'application/json, text/event-stream';

/** A tool that reports progress once (when asked to) before it answers. */
function echoTool(): Tool {
  return {
    name: 'echo',
    description: 'Answers its text; reports progress first when `progress` is true.',
    inputSchema: {
      type: 'object',
      properties: { text: { type: 'string' }, progress: { type: 'boolean' } },
      additionalProperties: false,
    },
    annotations: { readOnlyHint: true },
    source: 'builtin',
    toolsets: ['builtin'],
    execute: async (input, ctx) => {
      if (input.progress === true) {
        ctx.progress({ progress: 1, total: 2 });
        await new Promise((r) => setImmediate(r));
      }
      return { structured: { text: input.text } };
    },
  };
}

describe('Streamable HTTP transport on node:http', () => {
  let dir: string;
  let server: Server;
  let mcp: McpHttpEndpoint;
  let url: string;
  let close: () => void;

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'paddock-http-transport-'));
    const db = openDatabase(join(dir, 'paddock.db'));
    const registry = new ToolRegistry();
    registry.register([echoTool()]);
    const logger = silentLogger();
    const gateway = new Gateway({
      registry,
      audit: new SqliteAuditStore(db),
      policy: createWhitelistSandbox(policySchema.parse({})),
      permissions: new PermissionPolicy([{ pattern: '*', permission: 'auto', origin: 'test' }]),
      validator: new InputValidator(),
      logger,
    });
    mcp = new McpHttpEndpoint({ gateway, registry, version: 'test' }, logger, { maxBodyBytes: 64 * 1024 });
    server = createServer((req, res) => void mcp.handle(req, res));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    url = `http://127.0.0.1:${(server.address() as { port: number }).port}/mcp`;
    close = () => db.close();
  });

  after(async () => {
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
    await mcp.close();
    close();
    rmSync(dir, { recursive: true, force: true });
  });

  const post = (body: unknown, headers: Record<string, string> = {}) =>
    fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: ACCEPT, ...headers },
      body: typeof body === 'string' ? body : JSON.stringify(body),
    });

  /** Opens a session and returns the headers its requests carry. */
  async function open(): Promise<Record<string, string>> {
    const init = await post({
      jsonrpc: '2.0',
      id: 0,
      method: 'initialize',
      params: { protocolVersion: VERSION, capabilities: {}, clientInfo: { name: 't', version: '1' } },
    });
    assert.equal(init.status, 200);
    const session = init.headers.get('mcp-session-id');
    assert.ok(session);
    await init.text();
    const headers = { 'mcp-session-id': session, 'mcp-protocol-version': VERSION };
    const note = await post({ jsonrpc: '2.0', method: 'notifications/initialized' }, headers);
    assert.equal(note.status, 202);
    return headers;
  }

  /** The JSON-RPC messages of an SSE body, in order. */
  const events = (text: string) =>
    text
      .split('\n')
      .filter((l) => l.startsWith('data: '))
      .map((l) => JSON.parse(l.slice(6)) as { id?: number; method?: string; result?: unknown });

  it('sends an answer that is ready first as one SSE event with a length, and opens the event stream when progress comes before it', async () => {
    const headers = await open();
    const quick = await post(
      { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'echo', arguments: { text: 'a' } } },
      headers,
    );
    assert.equal(quick.status, 200);
    assert.equal(quick.headers.get('content-type'), 'text/event-stream');
    assert.equal(quick.headers.get('mcp-session-id'), headers['mcp-session-id']);
    const quickText = await quick.text();
    assert.equal(quick.headers.get('content-length'), String(Buffer.byteLength(quickText)));
    assert.deepEqual(
      events(quickText).map((m) => m.id),
      [1],
    );

    const slow = await post(
      {
        jsonrpc: '2.0',
        id: 2,
        method: 'tools/call',
        params: { name: 'echo', arguments: { text: 'b', progress: true }, _meta: { progressToken: 't' } },
      },
      headers,
    );
    assert.equal(slow.headers.get('content-length'), null);
    const messages = events(await slow.text());
    assert.deepEqual(
      messages.map((m) => m.method ?? m.id),
      ['notifications/progress', 2],
    );
  });

  it('answers a batch of requests on one stream, each answer once', async () => {
    const headers = await open();
    const call = (id: number) => ({
      jsonrpc: '2.0',
      id,
      method: 'tools/call',
      params: { name: 'echo', arguments: { text: String(id) } },
    });
    const res = await post([call(10), call(11), { jsonrpc: '2.0', id: 12, method: 'ping' }], headers);
    assert.equal(res.status, 200);
    const ids = events(await res.text())
      .map((m) => m.id)
      .sort();
    assert.deepEqual(ids, [10, 11, 12]);
  });

  it('refuses a missing Accept, a non-JSON body type, a bad message, another session, an unknown protocol version and a second GET stream', async () => {
    const headers = await open();
    const ping = { jsonrpc: '2.0', id: 1, method: 'ping' };
    assert.equal((await post(ping, { ...headers, accept: 'application/json' })).status, 406);
    assert.equal((await post(ping, { ...headers, 'content-type': 'text/plain' })).status, 415);
    assert.equal((await post({ hello: 'world' }, headers)).status, 400);
    assert.equal((await post([], headers)).status, 400);
    assert.equal((await post(ping, { ...headers, 'mcp-session-id': 'someone-else' })).status, 404);
    assert.equal((await post(ping, { ...headers, 'mcp-protocol-version': '1999-01-01' })).status, 400);
    const first = await fetch(url, { headers: { ...headers, accept: 'text/event-stream' } });
    assert.equal(first.status, 200);
    const second = await fetch(url, { headers: { ...headers, accept: 'text/event-stream' } });
    assert.equal(second.status, 409);
    await second.text();
    await first.body?.cancel();
    assert.equal((await post(ping, headers)).status, 200);
  });

  it('answers a body over the size limit with 413, and the session still answers', async () => {
    const headers = await open();
    const big = await post(
      {
        jsonrpc: '2.0',
        id: 1,
        method: 'tools/call',
        params: { name: 'echo', arguments: { text: 'x'.repeat(70 * 1024) } },
      },
      headers,
    ).catch(() => null);
    // the server answers 413 and drops the connection: the client may see either
    if (big) assert.equal(big.status, 413);
    const ok = await post(
      { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'echo', arguments: { text: 'y' } } },
      headers,
    );
    assert.equal(ok.status, 200);
    assert.equal(events(await ok.text())[0]?.id, 2);
  });

  it('ends a session on DELETE: its id is then unknown', async () => {
    const headers = await open();
    const del = await fetch(url, { method: 'DELETE', headers });
    assert.equal(del.status, 200);
    const after = await post({ jsonrpc: '2.0', id: 1, method: 'ping' }, headers);
    assert.equal(after.status, 404);
  });
});
