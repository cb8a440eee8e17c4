/**
 * Both protocol eras on `/mcp` of a real `paddock serve`, with the SDK's own client: the 2025
 * handshake (sessions, as before), `versionNegotiation: auto` (finds 2026-07-28) and a pin to
 * 2026-07-28. A 2026 request has no session: its computer is bound by principal and name.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Client } from '@modelcontextprotocol/client';
import { connectHttp } from '../helpers/clients.js';
import {
  runCli,
  type ServeProcess,
  startServe,
  type TempProject,
  tempProject,
} from '../helpers/paddock-process.js';
import { pollUntil } from '../helpers/poll.js';

interface AuditJson {
  tool: string;
  caller: string;
  success: boolean;
  input: string;
  approvalId: string | null;
  approver: string | null;
  errorCode: string | null;
}

async function audit(project: TempProject, tool: string): Promise<AuditJson[]> {
  const { stdout } = await runCli(project, ['audit', '--tool', tool, '--json']);
  return stdout
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as AuditJson);
}

function structured(result: unknown): Record<string, unknown> {
  const r = result as { isError?: boolean; structuredContent?: Record<string, unknown>; content?: unknown };
  assert.notEqual(r.isError, true, JSON.stringify(r.content));
  return r.structuredContent ?? {};
}

async function post(url: string, token: string, body: unknown, headers: Record<string, string> = {}) {
  const res = await fetch(`${url}/mcp`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${token}`,
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      ...headers,
    },
    body: JSON.stringify(body),
  });
  return { status: res.status, session: res.headers.get('mcp-session-id'), text: await res.text() };
}

/** The envelope every 2026-07-28 request carries in `params._meta`. */
const ENVELOPE = {
  'io.modelcontextprotocol/protocolVersion': '2026-07-28',
  'io.modelcontextprotocol/clientInfo': { name: 'raw', version: '1' },
  'io.modelcontextprotocol/clientCapabilities': {},
};
const MODERN_HEADERS = { 'mcp-protocol-version': '2026-07-28' };

describe('both MCP eras on /mcp of a real server', () => {
  let project: TempProject;
  let serve: ServeProcess;
  const open: Client[] = [];
  const client = async (negotiation: 'legacy' | 'auto' | 'modern', computer?: string) => {
    const c = await connectHttp(serve.url, serve.token, `eras-${negotiation}`, {
      negotiation,
      ...(computer ? { computer } : {}),
    });
    open.push(c);
    return c;
  };

  before(async () => {
    project = tempProject('computer:\n  autoLaunch: false\n');
    serve = await startServe(project);
  });
  after(async () => {
    await Promise.all(open.map((c) => c.close().catch(() => {})));
    await serve?.stop();
    project?.cleanup();
  });

  it('the SDK client lands on 2026-07-28 with auto and with a pin, on 2025 by default, and every era calls the same tools', async () => {
    const auto = await client('auto');
    const pinned = await client('modern');
    const legacy = await client('legacy');
    assert.equal(auto.getProtocolEra(), 'modern');
    assert.equal(pinned.getProtocolEra(), 'modern');
    assert.equal(legacy.getProtocolEra(), 'legacy');
    const names = async (c: Client) => (await c.listTools()).tools.map((t) => t.name).sort();
    assert.deepEqual(await names(auto), await names(legacy));
    assert.deepEqual(await names(pinned), await names(legacy));
    for (const [i, c] of [auto, pinned, legacy].entries()) {
      structured(await c.callTool({ name: 'save_memory', arguments: { content: `eras-note-${i}` } }));
      const found = structured(
        await c.callTool({ name: 'recall_memory', arguments: { query: `eras-note-${i}` } }),
      );
      assert.equal(found.count, 1, JSON.stringify(found));
    }
    const rows = await audit(project, 'save_memory');
    const callerOf = (i: number) => rows.find((r) => r.input.includes(`eras-note-${i}`))?.caller;
    assert.equal(callerOf(0), 'mcp:owner', 'a 2026 call is audited as the principal');
    assert.equal(callerOf(1), 'mcp:owner');
    assert.match(callerOf(2) ?? '', /^mcp:[0-9a-f-]{36}$/, 'a 2025 call is audited as its session');
  });

  it('answers server/discover with 2026-07-28, and a 2025 initialize still opens a session', async () => {
    const discover = await post(
      serve.url,
      serve.token,
      { jsonrpc: '2.0', id: 1, method: 'server/discover', params: { _meta: ENVELOPE } },
      { ...MODERN_HEADERS, 'mcp-method': 'server/discover' },
    );
    assert.equal(discover.status, 200, discover.text);
    assert.match(discover.text, /"supportedVersions":\["2026-07-28"\]/);
    assert.equal(discover.session, null, 'a 2026 answer opens no session');
    const init = await post(serve.url, serve.token, {
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
    });
    assert.equal(init.status, 200, init.text);
    assert.ok(init.session, 'initialize opens a 2025 session');
  });

  it('refuses a 2026 request whose envelope is malformed, and one whose version header disagrees with it', async () => {
    const bad = await post(
      serve.url,
      serve.token,
      {
        jsonrpc: '2.0',
        id: 2,
        method: 'tools/list',
        params: { _meta: { ...ENVELOPE, 'io.modelcontextprotocol/clientInfo': 42 } },
      },
      { ...MODERN_HEADERS, 'mcp-method': 'tools/list' },
    );
    assert.equal(bad.status, 400, bad.text);
    assert.match(bad.text, /-32602/);
    const mismatch = await post(
      serve.url,
      serve.token,
      { jsonrpc: '2.0', id: 3, method: 'tools/list', params: { _meta: ENVELOPE } },
      { 'mcp-protocol-version': '2025-11-25', 'mcp-method': 'tools/list' },
    );
    assert.equal(mismatch.status, 400, mismatch.text);
    assert.match(mismatch.text, /-32020/);
  });

  it('the per-request size limit holds for 2026 requests too', async () => {
    const huge = 'x'.repeat(5 * 1024 * 1024);
    const r = await post(
      serve.url,
      serve.token,
      {
        jsonrpc: '2.0',
        id: 4,
        method: 'tools/call',
        params: { name: 'save_memory', arguments: { content: huge }, _meta: ENVELOPE },
      },
      { ...MODERN_HEADERS, 'mcp-method': 'tools/call', 'mcp-name': 'save_memory' },
    );
    assert.equal(r.status, 413, r.text.slice(0, 200));
  });

  it('a 2026 client that connects anew for every call keeps finding the computer it launched', async () => {
    const first = await client('modern');
    const launched = structured(
      await first.callTool({ name: 'launch_computer', arguments: { profileId: 'shell' } }),
    );
    await first.close();
    const second = await client('modern');
    const status = await pollUntil(
      async () => {
        const s = structured(await second.callTool({ name: 'get_computer_status', arguments: {} }));
        return s.lifecycle === 'running' ? s : undefined;
      },
      'the launched computer running',
      60_000,
      200,
    );
    assert.equal(status!.generation, launched.generation, 'the same computer, not a new one');
    // a 2025 session still has its own computer
    const legacy = await client('legacy');
    const own = structured(await legacy.callTool({ name: 'get_computer_status', arguments: {} }));
    assert.notEqual(own.generation, launched.generation);
  });

  it('a 2026 request picks a named computer with the Paddock-Computer header', async () => {
    const a = await client('modern', 'eras-shared');
    structured(await a.callTool({ name: 'launch_computer', arguments: { profileId: 'shell' } }));
    const listed = await runCli(project, ['computers', 'list', '--json']);
    assert.match(listed.stdout, /eras-shared/);
    const b = await client('legacy', 'eras-shared');
    const seen = structured(await b.callTool({ name: 'get_computer_status', arguments: {} }));
    const mine = structured(await a.callTool({ name: 'get_computer_status', arguments: {} }));
    assert.equal(seen.generation, mine.generation, 'the 2025 session naming it sees the same computer');
  });
});
