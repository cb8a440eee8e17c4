import assert from 'node:assert/strict';
import { type AddressInfo, connect, createServer, type Server, type Socket } from 'node:net';
import { describe, it } from 'node:test';
import { guardSlowReader, type SlowReaderDrop } from '../../../src/shared/slow-reader.js';
import { pollUntil } from '../../helpers/poll.js';

const MiB = 1024 * 1024;

/** A TCP pair on loopback: `server` is the side the guard watches, `client` reads only when told. */
async function pair(): Promise<{ server: Socket; client: Socket; close(): Promise<void> }> {
  let accepted: (s: Socket) => void = () => undefined;
  const got = new Promise<Socket>((resolve) => {
    accepted = resolve;
  });
  const listener: Server = createServer((s) => accepted(s));
  await new Promise<void>((resolve) => listener.listen(0, '127.0.0.1', resolve));
  const client = connect((listener.address() as AddressInfo).port, '127.0.0.1');
  client.pause();
  const server = await got;
  server.on('error', () => undefined);
  client.on('error', () => undefined);
  return {
    server,
    client,
    close: async () => {
      server.destroy();
      client.destroy();
      await new Promise<void>((resolve) => listener.close(() => resolve()));
    },
  };
}

describe('slow-reader guard', () => {
  it('drops a peer that never reads once the backlog passes the bound, before buffering much more', async () => {
    const { server, close } = await pair();
    try {
      const drops: SlowReaderDrop[] = [];
      guardSlowReader(server, { maxBufferedBytes: 4 * MiB, stallMs: 3_600_000 }, (d) => drops.push(d));
      const chunk = Buffer.alloc(MiB, 0x61);
      let written = 0;
      while (!server.destroyed && written < 256 * MiB) {
        server.write(chunk);
        written += chunk.length;
      }
      assert.equal(server.destroyed, true, 'the peer was dropped');
      assert.equal(drops.length, 1);
      assert.equal(drops[0]?.reason, 'buffered');
      assert.ok(
        drops[0]!.bufferedBytes <= 4 * MiB + 2 * chunk.length,
        `backlog ${drops[0]!.bufferedBytes} bytes`,
      );
      assert.ok(written <= 6 * MiB + 8 * MiB, `stopped after ${written} bytes`);
    } finally {
      await close();
    }
  });

  it('drops a peer that needs a drain for longer than the stall time, and never a peer that reads', async () => {
    const slow = await pair();
    const reading = await pair();
    try {
      const drops: SlowReaderDrop[] = [];
      guardSlowReader(slow.server, { maxBufferedBytes: 64 * MiB, stallMs: 200 }, (d) => drops.push(d));
      // a bound a reading peer meets on any machine: it drains 16 MiB within seconds
      guardSlowReader(reading.server, { maxBufferedBytes: 64 * MiB, stallMs: 10_000 }, () =>
        assert.fail('a reading peer was dropped'),
      );
      let received = 0;
      reading.client.on('data', (d: Buffer) => {
        received += d.length;
      });
      reading.client.resume();
      // one large message each: more than the kernel buffers hold, under the backlog bound
      slow.server.write(Buffer.alloc(16 * MiB));
      reading.server.write(Buffer.alloc(16 * MiB));
      await pollUntil(() => slow.server.destroyed, 'the stalled peer to be dropped');
      assert.equal(drops[0]?.reason, 'stalled');
      await pollUntil(() => received === 16 * MiB, 'the reading peer to get every byte', 30_000);
      assert.equal(reading.server.destroyed, false);
    } finally {
      await slow.close();
      await reading.close();
    }
  });
});
