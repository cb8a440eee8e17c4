import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { SqliteAuditStore } from '../../../src/store/sqlite/audit-store.js';
import { openDatabase } from '../../../src/store/sqlite/database.js';
import { type DockServer, openSocket, startDockServer } from './harness.js';

describe('dock websocket access', () => {
  let server: DockServer;
  let cookie: string;

  before(async () => {
    server = await startDockServer();
    cookie = await server.login();
  });

  after(async () => {
    await server?.close();
  });

  it('refuses a websocket from another origin before the upgrade', async () => {
    await assert.rejects(
      openSocket(server, { cookie, origin: 'http://evil.example' }),
      (e: Error & { status?: number }) => {
        assert.equal(e.status, 403);
        return true;
      },
    );
    await assert.rejects(openSocket(server, { cookie, origin: `http://127.0.0.1:1` }), {
      status: 403,
    } as object);
  });

  it('refuses a websocket without a session or token', async () => {
    await assert.rejects(openSocket(server, { origin: server.base }), { status: 401 } as object);
    await assert.rejects(openSocket(server, { origin: server.base, cookie: 'paddock_session=forged' }), {
      status: 401,
    } as object);
  });

  it('refuses a websocket without an Origin header, even with a valid session', async () => {
    await assert.rejects(openSocket(server, { cookie }), { status: 403 } as object);
  });

  it('refuses upgrades on other paths', async () => {
    const { WebSocket } = await import('ws');
    const status = await new Promise<number | undefined>((resolve) => {
      const ws = new WebSocket(`ws://${server.host}/elsewhere`, { headers: { cookie, origin: server.base } });
      ws.once('unexpected-response', (_req, res) => resolve(res.statusCode));
      ws.once('open', () => resolve(101));
      ws.once('error', () => resolve(undefined));
    });
    assert.equal(status, 404);
  });

  it('accepts the page of this origin with its session and starts with a snapshot', async () => {
    const socket = await openSocket(server, { cookie, origin: server.base });
    try {
      const snapshot = await socket.next('snapshot');
      assert.equal(snapshot.resync, false);
      assert.equal(snapshot.status.lifecycle, 'unavailable');
      assert.deepEqual(snapshot.features, { computer: false, terminals: false, preview: false });
      assert.equal(snapshot.caller, 'dock:owner');
      assert.deepEqual(socket.invalid, []);
    } finally {
      await socket.close();
    }
  });
});

describe('dock websocket stream', () => {
  let server: DockServer;
  let cookie: string;

  before(async () => {
    server = await startDockServer();
    cookie = await server.login();
  });

  after(async () => {
    await server?.close();
  });

  it('pushes rows another process writes to the same store, once each, in the order they ended', async () => {
    const s = await openSocket(server, { cookie, origin: server.base });
    const other = openDatabase(join(server.dir, 'paddock.db'));
    try {
      await s.next('snapshot');
      const elsewhere = new SqliteAuditStore(other);
      const row = (id: string) => ({
        id,
        startedAt: Date.now(),
        durationMs: 1,
        tool: 'http_get',
        source: 'builtin',
        caller: 'mcp:other-server',
        via: 'direct' as const,
        input: { url: 'https://example.test/' },
        outputBytes: 0,
        success: true,
      });
      await elsewhere.record(row('inv_elsewhere_1'));
      await elsewhere.record(row('inv_elsewhere_2'));
      await s.next('audit', (m) => m.row.id === 'inv_elsewhere_2', 10_000);
      const ids = s.messages.flatMap((m) =>
        m.type === 'audit' && m.row.caller === 'mcp:other-server' ? [m.row.id] : [],
      );
      assert.deepEqual(ids, ['inv_elsewhere_1', 'inv_elsewhere_2']);
      assert.deepEqual(s.invalid, []);
    } finally {
      other.close();
      await s.close();
    }
  });

  it('pushes each committed audit row to every connected page', async () => {
    const a = await openSocket(server, { cookie, origin: server.base });
    const b = await openSocket(server, { cookie, origin: server.base });
    try {
      await a.next('snapshot');
      await b.next('snapshot');
      await server.saveMemory('pushed to the dock');
      for (const s of [a, b]) {
        const { row } = await s.next('audit', (m) => m.row.tool === 'save_memory');
        assert.equal(row.caller, 'mcp:test');
        assert.equal(row.via, 'direct');
        assert.equal(row.success, true);
        assert.match(row.input, /pushed to the dock/);
        assert.ok(row.durationMs >= 0);
      }
      assert.deepEqual([...a.invalid, ...b.invalid], []);
    } finally {
      await a.close();
      await b.close();
    }
  });

  it('gives a page that connects late the recent rows in its snapshot, oldest first', async () => {
    await server.saveMemory('first of two');
    await server.saveMemory('second of two');
    const late = await openSocket(server, { cookie, origin: server.base });
    try {
      const { audit } = await late.next('snapshot');
      const inputs = audit.map((r) => r.input);
      const first = inputs.findIndex((i) => i.includes('first of two'));
      const second = inputs.findIndex((i) => i.includes('second of two'));
      assert.ok(first >= 0 && second > first, inputs.join('\n'));
    } finally {
      await late.close();
    }
  });

  it('answers a malformed or unknown message with an INVALID_ARGUMENT reply and keeps the socket open', async () => {
    const s = await openSocket(server, { cookie, origin: server.base });
    try {
      await s.next('snapshot');
      s.ws.send('not json');
      const bad = await s.next('reply', (m) => !m.ok);
      assert.equal(bad.code, 'INVALID_ARGUMENT');
      s.send({ type: 'terminal.input', terminalId: 'g1.term1', data: 'x'.repeat(70_000), requestId: 'big' });
      const big = await s.next('reply', (m) => m.requestId === null && m.message.includes('data'));
      assert.equal(big.code, 'INVALID_ARGUMENT');
      s.send({ type: 'launch', profileId: 'shell', requestId: 'l1' });
      const launch = await s.next('reply', (m) => m.requestId === 'l1');
      assert.equal(launch.ok, false);
      assert.equal(launch.code, 'UNSUPPORTED_CAPABILITY');
      assert.equal(s.ws.readyState, s.ws.OPEN);
    } finally {
      await s.close();
    }
  });

  it('closes a socket that sends a message larger than the limit', async () => {
    const s = await openSocket(server, { cookie, origin: server.base });
    const code = await new Promise<number>((resolve) => {
      s.ws.once('close', (c) => resolve(c));
      s.ws.send('x'.repeat(200 * 1024));
    });
    assert.equal(code, 1009);
  });

  it('stops pushing to a page once it disconnects', async () => {
    const s = await openSocket(server, { cookie, origin: server.base });
    await s.next('snapshot');
    await s.close();
    const deadline = Date.now() + 5000;
    while (server.dock.hub.size > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
    assert.equal(server.dock.hub.size, 0);
  });
});
