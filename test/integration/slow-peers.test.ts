import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { fixturePath } from '../fixtures/mcp/harness.js';
import { connectHttp } from '../helpers/clients.js';
import { type ServeProcess, startServe, type TempProject, tempProject } from '../helpers/paddock-process.js';
import { pollUntil } from '../helpers/poll.js';

const MiB = 1024 * 1024;
/** The server's bound on bytes waiting for one peer (src/shared/slow-reader.ts). */
const MAX_BUFFERED = 64 * MiB;

/** A project whose upstream fixture has a `big` tool, with JSON logs and a short stall bound. */
function project(): TempProject {
  const p = tempProject(
    'computer:\n  autoLaunch: false\nserver:\n  stalledPeerSeconds: 0.5\nlog:\n  json: true\n',
  );
  mkdirSync(join(p.dir, '.paddock'));
  writeFileSync(
    join(p.dir, '.paddock', 'mcp_servers.yaml'),
    [
      'mcpServers:',
      '  fx:',
      `    command: ${JSON.stringify(process.execPath)}`,
      `    args: [${JSON.stringify(fixturePath('stdio-server'))}, "--mode", "normal"]`,
      '    startup: eager',
      '    timeoutMs: 60000',
      '    permissions:',
      '      "*": auto',
    ].join('\n'),
  );
  return p;
}

/** The server's `mcp.peer_dropped` log events. */
function drops(serve: ServeProcess): { transport: string; reason: string; bufferedBytes: number }[] {
  return serve
    .stderr()
    .split('\n')
    .filter((l) => l.includes('"mcp.peer_dropped"'))
    .map((l) => JSON.parse(l));
}

const rpc = (id: number, method: string, params: Record<string, unknown> = {}) =>
  `${JSON.stringify({ jsonrpc: '2.0', id, method, params })}\n`;
const initialize = (id: number) =>
  rpc(id, 'initialize', {
    protocolVersion: '2025-06-18',
    capabilities: {},
    clientInfo: { name: 'never-reads', version: '1' },
  });

/** Reads lines from `socket` until `predicate` matches one. */
function lineMatching(socket: Socket, predicate: (line: string) => boolean): Promise<string> {
  return new Promise((resolve, reject) => {
    let buffered = '';
    const onData = (d: Buffer) => {
      buffered += d.toString();
      const lines = buffered.split('\n');
      buffered = lines.pop() ?? '';
      const hit = lines.find(predicate);
      if (hit !== undefined) {
        socket.off('data', onData);
        resolve(hit);
      }
    };
    socket.on('data', onData);
    socket.once('error', reject);
  });
}

describe('peers that never read', () => {
  it('drops a socket session that stops reading while results pile up, within the buffered bound, and keeps serving others', async () => {
    const p = project();
    const serve = await startServe(p);
    const socket = connect(join(p.dataDir, 'run', 'paddock.sock'));
    try {
      const { key } = JSON.parse(readFileSync(join(p.dataDir, 'run', 'server.json'), 'utf8')) as {
        key: string;
      };
      await new Promise<void>((resolve) => socket.once('connect', resolve));
      const welcome = lineMatching(socket, (l) => l.includes('"paddock"'));
      socket.write(`${JSON.stringify({ paddock: 1, op: 'mcp', key })}\n`);
      assert.match(await welcome, /"ok":true/);
      const initialized = lineMatching(socket, (l) => l.includes('"id":1'));
      socket.write(initialize(1));
      await initialized;
      socket.write(`${JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' })}\n`);
      // from here on the peer reads nothing
      socket.pause();
      for (let id = 2; id < 2 + 6; id++)
        socket.write(rpc(id, 'tools/call', { name: 'fx_big', arguments: { megabytes: 8 } }));
      const drop = await pollUntil(
        () => drops(serve).find((d) => d.transport === 'socket'),
        'the server to drop the peer that never reads',
        120_000,
      );
      assert.ok(drop);
      assert.ok(
        drop.bufferedBytes <= MAX_BUFFERED + 2 * 9 * MiB,
        `at most the bound plus two messages waited for the peer (${drop.bufferedBytes} bytes)`,
      );
      // the server goes on serving everyone else
      const other = await connectHttp(serve.url, serve.token);
      const r = await other.callTool({ name: 'fx_echo', arguments: { message: 'still here' } });
      assert.match(JSON.stringify(r.content), /still here/);
      await other.close();
    } finally {
      socket.destroy();
      await serve.stop();
      p.cleanup();
    }
  });

  it('cuts off an HTTP client that leaves a POST response stream unread, and its session still answers other requests', async () => {
    const p = project();
    const serve = await startServe(p);
    let raw: Socket | undefined;
    try {
      const headers = {
        authorization: `Bearer ${serve.token}`,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
      };
      const init = await fetch(`${serve.url}/mcp`, { method: 'POST', headers, body: initialize(1) });
      const session = init.headers.get('mcp-session-id');
      assert.ok(session);
      await init.text();
      const inSession = { ...headers, 'mcp-session-id': session, 'mcp-protocol-version': '2025-06-18' };
      const note = await fetch(`${serve.url}/mcp`, {
        method: 'POST',
        headers: inSession,
        body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }),
      });
      await note.text();
      // an 8 MiB result (the upstream limit is 10 MiB) on a connection whose reader never reads
      raw = connect(Number(new URL(serve.url).port), '127.0.0.1');
      await new Promise<void>((resolve) => raw?.once('connect', resolve));
      raw.pause();
      const body = rpc(2, 'tools/call', { name: 'fx_big', arguments: { megabytes: 8 } });
      raw.write(
        `POST /mcp HTTP/1.1\r\nHost: ${new URL(serve.url).host}\r\n${Object.entries(inSession)
          .map(([k, v]) => `${k}: ${v}`)
          .join('\r\n')}\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
      );
      const drop = await pollUntil(
        () => drops(serve).find((d) => d.transport === 'http'),
        'the server to cut off the response nobody reads',
        120_000,
      );
      assert.equal(drop?.reason, 'stalled');
      const again = await fetch(`${serve.url}/mcp`, {
        method: 'POST',
        headers: inSession,
        body: rpc(3, 'tools/call', { name: 'fx_echo', arguments: { message: 'same session' } }),
      });
      assert.equal(again.status, 200);
      assert.match(await again.text(), /same session/);
    } finally {
      raw?.destroy();
      await serve.stop();
      p.cleanup();
    }
  });
});
