import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { WebSocket, WebSocketServer } from 'ws';
import { DockClient } from '../../../src/web/dock/client.js';
import type { ServerMessage } from '../../../src/web/dock/protocol.js';
import { pollUntil } from '../../helpers/poll.js';
import { type DockServer, openSocket, startDockServer } from './harness.js';

const LIMITS = { maxQueuedBytes: 64 * 1024, highWaterBytes: 16 * 1024, maxMergedChars: 8 * 1024 };

/** The client's TCP socket, to stop reading from it (a page that hangs). */
function rawSocket(ws: WebSocket): Socket {
  return (ws as unknown as { _socket: Socket })._socket;
}

/** Records a row straight into the real audit store (the gateway is not under test here). */
async function record(server: DockServer, note: string): Promise<void> {
  await server.audit.record({
    id: `inv_${note.replace(/\W/g, '_')}`,
    startedAt: Date.now(),
    durationMs: 1,
    tool: 'save_memory',
    source: 'builtin',
    caller: 'mcp:test',
    via: 'direct',
    input: { content: `${note} ${'y'.repeat(700)}` },
    outputBytes: 10,
    success: true,
  });
}

describe('dock backpressure', () => {
  let server: DockServer;
  let cookie: string;

  before(async () => {
    server = await startDockServer({ limits: LIMITS });
    cookie = await server.login();
  });

  after(async () => {
    await server?.close();
  });

  it('bounds what it queues for a page that stops reading, then resynchronises it with a snapshot', async () => {
    const s = await openSocket(server, { cookie, origin: server.base });
    try {
      await s.next('snapshot');
      rawSocket(s.ws).pause();
      let maxQueued = 0;
      for (let i = 0; i < 12_000; i++) {
        await record(server, `row ${i}`);
        for (const st of server.dock.hub.stats()) maxQueued = Math.max(maxQueued, st.queuedBytes);
      }
      const [stats] = server.dock.hub.stats();
      assert.ok(stats, 'the page is still connected');
      assert.ok(stats.resyncs >= 1, `expected a resync, got ${JSON.stringify(stats)}`);
      assert.ok(maxQueued <= LIMITS.maxQueuedBytes + 8 * 1024, `queued ${maxQueued} bytes`);
      rawSocket(s.ws).resume();
      const resync = await s.next('snapshot', (m) => m.resync, 20_000);
      assert.ok(
        resync.audit.some((r) => r.input.includes('row 11999 ')),
        'the resync snapshot carries the newest rows',
      );
      assert.deepEqual(s.invalid, []);
    } finally {
      await s.close();
    }
  });

  it('keeps delivering every row, in order, to a page that reads while another page is stuck', async () => {
    const stuck = await openSocket(server, { cookie, origin: server.base });
    const fast = await openSocket(server, { cookie, origin: server.base });
    try {
      await stuck.next('snapshot');
      await fast.next('snapshot');
      rawSocket(stuck.ws).pause();
      for (let i = 0; i < 8000; i++) {
        await record(server, `fast ${i}`);
        if (i % 100 === 99) await new Promise((r) => setImmediate(r));
      }
      await fast.next('audit', (m) => m.row.input.includes('fast 7999 '), 20_000);
      const seen = fast.messages.flatMap((m) =>
        m.type === 'audit' ? [/fast (\d+) /.exec(m.row.input)?.[1]] : [],
      );
      assert.deepEqual(
        seen.map(Number),
        Array.from({ length: 8000 }, (_, i) => i),
      );
      assert.ok(
        (server.dock.hub.stats().find((st) => st.resyncs > 0)?.resyncs ?? 0) >= 1,
        'the stuck page overflowed',
      );
    } finally {
      await stuck.close();
      await fast.close();
    }
  });
});

describe('DockClient queue', () => {
  let http: Server;
  let wss: WebSocketServer;
  let port: number;

  before(async () => {
    http = createServer();
    wss = new WebSocketServer({ server: http });
    await new Promise<void>((r) => http.listen(0, '127.0.0.1', r));
    port = (http.address() as AddressInfo).port;
  });

  after(async () => {
    for (const c of wss.clients) c.terminate();
    await new Promise<void>((r) => wss.close(() => r()));
    await new Promise<void>((r) => http.close(() => r()));
  });

  /** A real connection whose reader is paused; resolves with both ends. */
  async function stuckPair(): Promise<{ server: WebSocket; client: WebSocket; received: ServerMessage[] }> {
    const serverSide = new Promise<WebSocket>((r) => wss.once('connection', r));
    const client = new WebSocket(`ws://127.0.0.1:${port}/`);
    const received: ServerMessage[] = [];
    client.on('message', (d) => received.push(JSON.parse(d.toString()) as ServerMessage));
    await new Promise((r) => client.once('open', r));
    rawSocket(client).pause();
    return { server: await serverSide, client, received };
  }

  const status = (generation: number): ServerMessage => ({
    type: 'status',
    status: {
      generation,
      profileId: 'shell',
      profileName: 'Shell',
      lifecycle: 'running',
      bootError: null,
      bootMs: 1,
      capabilities: [],
      message: null,
    },
  });

  /** Sends output until the socket's own buffer passes the high-water mark (the kernel's is full). */
  function fill(dock: DockClient, ws: WebSocket): void {
    for (let i = 0; ws.bufferedAmount < LIMITS.highWaterBytes; i++) {
      dock.send({
        type: 'terminal.output',
        terminalId: 'fill',
        data: 'f'.repeat(64 * 1024),
        cursor: `f${i}`,
        gap: false,
      });
    }
  }

  it('replaces a queued state message with the newer one of the same key', async () => {
    const { server: ws, client, received } = await stuckPair();
    try {
      const dock = new DockClient(ws, () => status(0), { ...LIMITS, maxQueuedBytes: 1024 * 1024 });
      fill(dock, ws);
      for (let g = 1; g <= 500; g++) dock.send(status(g), 'status');
      assert.equal(dock.stats().queuedMessages, 1);
      rawSocket(client).resume();
      await pollUntil(
        () => received.some((m) => m.type === 'status' && m.status.generation === 500),
        'the newest status',
      );
      assert.equal(received.filter((m) => m.type === 'status').length, 1);
    } finally {
      client.terminate();
    }
  });

  it('merges queued output of one terminal into fewer messages without losing or reordering bytes', async () => {
    const { server: ws, client, received } = await stuckPair();
    try {
      const dock = new DockClient(ws, () => status(0), { ...LIMITS, maxQueuedBytes: 1024 * 1024 });
      fill(dock, ws);
      let expected = '';
      for (let i = 0; i < 5000; i++) {
        const piece = `${i},`;
        expected += piece;
        dock.send({ type: 'terminal.output', terminalId: 't', data: piece, cursor: `c${i}`, gap: false });
      }
      assert.ok(dock.stats().queuedMessages <= 5, JSON.stringify(dock.stats()));
      rawSocket(client).resume();
      await pollUntil(
        () => received.some((m) => m.type === 'terminal.output' && m.cursor === 'c4999'),
        'all output',
      );
      const text = received
        .map((m) => (m.type === 'terminal.output' && m.terminalId === 't' ? m.data : ''))
        .join('');
      assert.equal(text, expected);
    } finally {
      client.terminate();
    }
  });

  it('drops the queue past its bound and sends a fresh snapshot once the page reads again', async () => {
    const { server: ws, client, received } = await stuckPair();
    try {
      const dock = new DockClient(ws, () => status(777), LIMITS);
      fill(dock, ws);
      for (let i = 0; i < 100; i++)
        dock.send({
          type: 'terminal.output',
          terminalId: `t${i}`,
          data: 'o'.repeat(4096),
          cursor: 'c',
          gap: false,
        });
      assert.equal(dock.stats().resyncs, 1);
      assert.equal(dock.stats().queuedBytes, 0);
      rawSocket(client).resume();
      await pollUntil(
        () => received.some((m) => m.type === 'status' && m.status.generation === 777),
        'the resync message',
      );
      assert.equal(received.filter((m) => m.type === 'terminal.output' && m.terminalId !== 'fill').length, 0);
    } finally {
      client.terminate();
    }
  });
});
