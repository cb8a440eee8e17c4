import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { connect, createServer, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { describe, it } from 'node:test';
import { relay } from '../../../src/mcp/bridge.js';
import { instancePaths } from '../../../src/mcp/instance.js';
import { MAX_MESSAGE_BYTES } from '../../../src/mcp/line-limit.js';
import { pollUntil } from '../../helpers/poll.js';

describe('the bridge relay', () => {
  it('answers an oversized line between the server’s lines, never inside one', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'paddock-relay-'));
    const path = join(dir, 's.sock');
    let peer: Socket | undefined;
    let received = '';
    const server = createServer((s) => {
      peer = s;
      s.on('data', (d: Buffer) => {
        received += d.toString();
      });
    });
    await new Promise<void>((r) => server.listen(path, r));
    const socket = connect(path);
    const stdin = new PassThrough();
    try {
      await new Promise((r) => socket.once('connect', r));
      const stdout = new PassThrough();
      let out = '';
      stdout.on('data', (d: Buffer) => {
        out += d.toString();
      });
      const done = relay(socket, Buffer.alloc(0), process.pid, instancePaths(dir), { stdin, stdout });
      await pollUntil(() => peer, 'the connection');
      peer!.write('{"jsonrpc":"2.0","id":1,');
      await pollUntil(() => out.length > 0, 'the first half of the server’s line');
      stdin.write(`{"jsonrpc":"2.0","id":2,"params":"${'x'.repeat(MAX_MESSAGE_BYTES)}"}\n`);
      stdin.write('{"jsonrpc":"2.0","id":3,"method":"ping"}\n');
      // the ping reached the server, so the oversized line before it was handled
      await pollUntil(() => received.includes('"id":3'), 'the ping after the dropped line');
      assert.ok(!received.includes('"id":2'), 'the oversized line never reached the server');
      peer!.write('"result":{}}\n');
      const lines = await pollUntil(() => {
        const l = out.split('\n').filter(Boolean);
        return l.length >= 2 ? l : null;
      }, 'both lines on stdout');
      assert.ok(lines);
      const parsed = lines.map((l) => JSON.parse(l) as { id: number; error?: unknown });
      assert.deepEqual(
        parsed.map((p) => p.id),
        [1, 2],
      );
      assert.ok(parsed[1]?.error);
      stdin.end();
      peer!.end();
      assert.equal(await done, 0, 'a client that ended its input exits 0');
    } finally {
      stdin.destroy();
      socket.destroy();
      peer?.destroy();
      server.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
