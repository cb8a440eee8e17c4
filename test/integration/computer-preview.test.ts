import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { createServer, get, type IncomingMessage, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import WebSocket from 'ws';
import type { ComputerManager } from '../../src/computer/manager.js';
import type { PreviewSource } from '../../src/web/dock/sources.js';
import { PREVIEW_SANDBOX_CSP } from '../../src/web/preview/http.js';
import { PreviewRelay } from '../../src/web/preview/relay.js';
import { pollUntil } from '../helpers/poll.js';
import { codeOf, launchRunning, toolCaller, withComputer } from '../unit/computer/fixture.js';

/** A host HTTP server that mounts the preview relay under /preview, as the web app does. */
async function mount(manager: ComputerManager): Promise<{ base: string; server: Server }> {
  const relay = new PreviewRelay(manager.preview);
  const server = createServer((req, res) => void relay.handlePreview(req, res));
  server.on('upgrade', (req, socket, head) => void relay.handlePreviewUpgrade(req, socket, head));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { base: `http://127.0.0.1:${(server.address() as AddressInfo).port}/preview`, server };
}

async function closeServer(server: Server): Promise<void> {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
}

/** Echoes each request (method, url, headers, body hash) as JSON; echoes WebSocket text frames. */
const ECHO_SERVER = String.raw`
import { createServer } from 'node:http';
import { createHash } from 'node:crypto';
const server = createServer((req, res) => {
  const hash = createHash('sha256');
  let bytes = 0;
  req.on('data', (c) => { hash.update(c); bytes += c.length; });
  req.on('end', () => {
    if (req.url.startsWith('/redirect')) { res.writeHead(302, { location: '/landing?from=redirect' }); res.end(); return; }
    res.writeHead(200, {
      'content-type': 'application/json',
      'set-cookie': ['app=1; Path=/; Domain=localhost; HttpOnly', 'paddock_session=forged; Path=/'],
    });
    res.end(JSON.stringify({ method: req.method, url: req.url, headers: req.headers, bytes, sha256: hash.digest('hex') }));
  });
});
server.on('upgrade', (req, socket) => {
  const accept = createHash('sha1').update(req.headers['sec-websocket-key'] + '258EAFA5-E914-47DA-95CA-C5AB0DC85B11').digest('base64');
  socket.write('HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: ' + accept + '\r\n\r\n');
  let buf = Buffer.alloc(0);
  socket.on('data', (d) => {
    buf = Buffer.concat([buf, d]);
    for (;;) {
      if (buf.length < 2) return;
      const op = buf[0] & 0x0f;
      let len = buf[1] & 0x7f;
      let off = 2;
      if (len === 126) { if (buf.length < 4) return; len = buf.readUInt16BE(2); off = 4; }
      if (buf.length < off + 4 + len) return;
      const mask = buf.subarray(off, off + 4);
      const payload = Buffer.from(buf.subarray(off + 4, off + 4 + len));
      for (let i = 0; i < payload.length; i++) payload[i] ^= mask[i % 4];
      buf = buf.subarray(off + 4 + len);
      if (op === 8) { socket.end(Buffer.from([0x88, 0])); return; }
      const text = Buffer.from('echo:' + payload.toString() + ':' + req.url);
      const head = text.length < 126 ? Buffer.from([0x81, text.length]) : Buffer.from([0x81, 126, text.length >> 8, text.length & 255]);
      socket.write(Buffer.concat([head, text]));
    }
  });
});
server.listen(Number(process.argv[2]), '127.0.0.1');
`;

/** Starts a server in the computer with run_command and waits until the relay reaches it. */
async function serve(manager: ComputerManager, script: string, port: number): Promise<void> {
  await manager.runCommand({ script: `${script} >/tmp/server.log 2>&1 &`, waitMs: 0, timeoutMs: 120_000 });
  await pollUntil(
    async () => (await manager.preview.probe(manager.computer!, port, '/')).listening,
    `a server on port ${port} in the computer`,
    20_000,
  );
}

/**
 * Whether a connection of the guest agent to `port` in the computer has bytes in its receive
 * queue that the agent has not read (from the computer's /proc/net/tcp; the job's answer is a
 * round trip on the guest link, after the queue was read).
 */
async function agentHoldsUnreadBytes(manager: ComputerManager, port: number): Promise<boolean> {
  const r = await manager.runCommand({ script: 'cat /proc/net/tcp', waitMs: 10_000, timeoutMs: 20_000 });
  assert.equal(r.exitCode, 0, r.stderr);
  const remote = `0100007F:${port.toString(16).toUpperCase().padStart(4, '0')}`;
  return r.stdout
    .split('\n')
    .slice(1)
    .map((line) => line.trim().split(/\s+/))
    .some(
      ([, , rem, state, queues]) => rem === remote && state === '01' && /:0*[1-9A-F]/i.test(queues ?? ''),
    );
}

function getRaw(
  url: string,
  headers: Record<string, string> = {},
): Promise<{ res: IncomingMessage; body: Buffer }> {
  return new Promise((resolve, reject) => {
    get(url, { headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ res, body: Buffer.concat(chunks) }));
      res.on('error', reject);
    }).on('error', reject);
  });
}

describe('computer preview (bwrap)', { concurrency: false }, () => {
  it('with nothing listening: a 502 page naming the port and how to start a server, and navigate_preview says so', async () => {
    await withComputer({}, async ({ manager, ctx }) => {
      const { base, server } = await mount(manager);
      try {
        const before = await getRaw(`${base}/`);
        assert.equal(before.res.statusCode, 503, 'no computer yet');
        assert.match(before.body.toString(), /No computer is running/);
        await launchRunning(manager);
        const call = toolCaller(manager, ctx);
        const page = await getRaw(`${base}/index.html`);
        assert.equal(page.res.statusCode, 502);
        assert.match(page.res.headers['content-type'] ?? '', /^text\/html/);
        assert.match(page.body.toString(), /Nothing is listening on port 8000 inside the computer/);
        assert.match(page.body.toString(), /python3 -m http\.server 8000/);
        const nav = await call('navigate_preview', { path: '/index.html' });
        assert.deepEqual(nav.observed, {
          port: 8000,
          listening: false,
          httpStatus: null,
          status: 'unreachable',
          message: (nav.observed as Record<string, unknown>).message,
        });
        assert.match(
          String((nav.observed as Record<string, unknown>).message),
          /Nothing is listening on port 8000/,
        );
        assert.equal((nav.requested as Record<string, unknown>).url, '/preview/index.html');
        const status = await call('get_computer_status');
        assert.equal((status.preview as Record<string, unknown>).status, 'unreachable');
      } finally {
        await closeServer(server);
      }
    });
  });

  it('reaches python3 -m http.server 8000 in the computer through handlePreview: the directory listing comes back', async () => {
    await withComputer({}, async ({ manager, ctx }) => {
      const c = await launchRunning(manager, 'python');
      const { base, server } = await mount(manager);
      try {
        writeFileSync(join(c.hostWorkspace, 'hello.html'), '<h1>hello from the computer</h1>');
        writeFileSync(join(c.hostWorkspace, 'big.bin'), randomBytes(3 * 1024 * 1024));
        await serve(manager, 'cd /workspace && python3 -m http.server 8000 --bind 127.0.0.1', 8000);
        const listing = await getRaw(`${base}/`);
        assert.equal(listing.res.statusCode, 200);
        assert.match(listing.body.toString(), /Directory listing for \//);
        assert.match(listing.body.toString(), /hello\.html/);
        assert.equal(listing.res.headers['content-security-policy'], PREVIEW_SANDBOX_CSP);
        const big = await getRaw(`${base}/big.bin`);
        assert.equal(big.body.length, 3 * 1024 * 1024);
        assert.equal(
          createHash('sha256').update(big.body).digest('hex'),
          createHash('sha256')
            .update(await import('node:fs').then((fs) => fs.readFileSync(join(c.hostWorkspace, 'big.bin'))))
            .digest('hex'),
        );
        const call = toolCaller(manager, ctx);
        const nav = await call('navigate_preview', { path: '/hello.html?x=1#title' });
        // the job whose processes serve the port (the server started by `serve`)
        assert.match(String((nav.observed as Record<string, unknown>).jobId), /^g\d+\.job\d+$/);
        assert.deepEqual(
          { ...(nav.observed as Record<string, unknown>), message: undefined, jobId: undefined },
          {
            port: 8000,
            listening: true,
            httpStatus: 200,
            status: 'ready',
            message: undefined,
            jobId: undefined,
          },
        );
        const missing = await call('navigate_preview', { path: '/日本.html' });
        assert.equal(
          (missing.observed as Record<string, unknown>).httpStatus,
          404,
          'a non-ASCII path is relayed',
        );
        await call('navigate_preview', { path: '/hello.html?x=1#title' });
        const preview: PreviewSource = manager.preview;
        assert.equal(preview.state().path, '/hello.html?x=1#title');
        assert.equal(preview.state().url, '/preview/hello.html?x=1#title');
        await pollUntil(() => manager.preview.openConnections === 0, 'relayed connections to close', 10_000);
      } finally {
        await closeServer(server);
      }
    });
  });

  it("relays bodies, redirects and cookies without handing the dock's credentials to the guest, on the configured port", async () => {
    await withComputer({ computer: { previewPort: 8765 } }, async ({ manager }) => {
      const c = await launchRunning(manager);
      assert.equal(manager.preview.state().port, 8765);
      const { base, server } = await mount(manager);
      try {
        writeFileSync(join(c.hostWorkspace, 'echo.mjs'), ECHO_SERVER);
        await serve(manager, 'node /workspace/echo.mjs 8765', 8765);
        const body = randomBytes(2 * 1024 * 1024);
        const echoed = await new Promise<{ res: IncomingMessage; json: Record<string, unknown> }>(
          (resolve, reject) => {
            const req = request(
              `${base}/api/items?q=1`,
              {
                method: 'POST',
                headers: {
                  cookie: 'paddock_session=secret; theme=dark',
                  'content-type': 'application/octet-stream',
                },
              },
              (res) => {
                const chunks: Buffer[] = [];
                res.on('data', (d: Buffer) => chunks.push(d));
                res.on('end', () => resolve({ res, json: JSON.parse(Buffer.concat(chunks).toString()) }));
              },
            );
            req.on('error', reject);
            req.end(body);
          },
        );
        const headers = echoed.json.headers as Record<string, string>;
        assert.equal(echoed.json.method, 'POST');
        assert.equal(echoed.json.url, '/api/items?q=1');
        assert.equal(echoed.json.bytes, body.length);
        assert.equal(echoed.json.sha256, createHash('sha256').update(body).digest('hex'));
        assert.equal(headers.cookie, 'theme=dark', "the dock's session cookie never reaches the guest");
        assert.equal(headers.host, 'localhost:8765');
        assert.equal(headers['x-forwarded-prefix'], '/preview');
        assert.deepEqual(echoed.res.headers['set-cookie'], ['app=1; Path=/preview/; HttpOnly']);
        const redirect = await getRaw(`${base}/redirect`);
        assert.equal(redirect.res.statusCode, 302);
        assert.equal(redirect.res.headers.location, '/preview/landing?from=redirect');
      } finally {
        await closeServer(server);
      }
    });
  });

  it('relays a WebSocket upgrade to a server in the computer, messages both ways, and drops it on relaunch', async () => {
    await withComputer({ computer: { previewPort: 8766 } }, async ({ manager }) => {
      const c = await launchRunning(manager);
      const { base, server } = await mount(manager);
      try {
        writeFileSync(join(c.hostWorkspace, 'echo.mjs'), ECHO_SERVER);
        await serve(manager, 'node /workspace/echo.mjs 8766', 8766);
        const ws = new WebSocket(`${base.replace(/^http/, 'ws')}/live/socket?room=1`);
        const replies: string[] = [];
        ws.on('message', (data) => replies.push(String(data)));
        await new Promise<void>((resolve, reject) => {
          ws.once('open', () => resolve());
          ws.once('error', reject);
        });
        ws.send('hello');
        ws.send('x'.repeat(1000));
        await pollUntil(() => replies.length === 2, 'two echoed messages', 10_000);
        assert.deepEqual(replies, [
          'echo:hello:/live/socket?room=1',
          `echo:${'x'.repeat(1000)}:/live/socket?room=1`,
        ]);
        ws.close();
        await pollUntil(() => manager.preview.openConnections === 0, 'the relayed socket to close', 10_000);

        const second = new WebSocket(`${base.replace(/^http/, 'ws')}/again`);
        await new Promise<void>((resolve, reject) => {
          second.once('open', () => resolve());
          second.once('error', reject);
        });
        const closed = new Promise<void>((resolve) => second.once('close', () => resolve()));
        await launchRunning(manager);
        await closed;
        const after = await getRaw(`${base}/`);
        assert.equal(
          after.res.statusCode,
          502,
          'a relaunch drops relayed connections; the relay keeps answering',
        );
      } finally {
        await closeServer(server);
      }
    });
  });

  it('a paused reader stops the guest from sending: the host holds about one window, not the whole response', async () => {
    await withComputer({}, async ({ manager }) => {
      const c = await launchRunning(manager, 'python');
      const { base, server } = await mount(manager);
      try {
        writeFileSync(join(c.hostWorkspace, 'huge.bin'), Buffer.alloc(64 * 1024 * 1024, 7));
        await serve(manager, 'cd /workspace && python3 -m http.server 8000 --bind 127.0.0.1', 8000);
        const res = await new Promise<IncomingMessage>((resolve, reject) =>
          get(`${base}/huge.bin`, resolve).on('error', reject),
        );
        res.pause();
        const received = () => manager.preview.connectionStats().reduce((n, s) => n + s.receivedBytes, 0);
        // Stopped for certain: the guest agent leaves bytes unread on its connection to the
        // server, and none reach the host across two more round trips on the guest link.
        const last = await pollUntil(
          async () => {
            const before = received();
            if (before === 0 || !(await agentHoldsUnreadBytes(manager, 8000))) return null;
            await c.call('ping', {});
            await c.call('ping', {});
            return received() === before ? before : null;
          },
          'the guest agent to stop reading the server',
          30_000,
        );
        assert.ok(last < 16 * 1024 * 1024, `the host received ${last} bytes of 64 MiB for a paused reader`);
        res.resume();
        let total = 0;
        res.on('data', (d: Buffer) => {
          total += d.length;
        });
        await new Promise((resolve) => res.on('end', resolve));
        assert.equal(total, 64 * 1024 * 1024, 'the rest follows once the reader resumes');
      } finally {
        await closeServer(server);
      }
    });
  });

  it('navigate_preview refuses external URLs, traversal and backslashes, and tells the dock about every navigation', async () => {
    await withComputer({}, async ({ manager, ctx }) => {
      await launchRunning(manager);
      const call = toolCaller(manager, ctx);
      for (const path of [
        'http://example.com/',
        '//example.com/x',
        'index.html',
        '/a/../etc/passwd',
        '/a/%2e%2e/b',
        '/a\\b',
        '/a%5cb',
        '/a b',
        '',
        `/${'a'.repeat(4096)}`,
      ]) {
        assert.equal(await codeOf(call('navigate_preview', { path })), 'INVALID_ARGUMENT', path.slice(0, 40));
      }
      const seen: string[] = [];
      const sub = manager.preview.onChange((s) => seen.push(`${s.status}:${s.path}`));
      await call('navigate_preview', { path: '/dots..are/fine.html?q=..' });
      const unicode = await call('navigate_preview', { path: '/日本/ü.html' });
      sub.dispose();
      assert.deepEqual(seen, [
        'loading:/dots..are/fine.html?q=..',
        'unreachable:/dots..are/fine.html?q=..',
        'loading:/日本/ü.html',
        'unreachable:/日本/ü.html',
      ]);
      assert.equal((unicode.requested as Record<string, unknown>).navigation, 2);
    });
  });
});
