import assert from 'node:assert/strict';
import { mkdtempSync, readlinkSync, rmSync } from 'node:fs';
import { connect, createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { unixSocketInodes } from '../../../src/guest/socket-owner.js';

/** The inode of a connected socket's own descriptor, as /proc/<pid>/fd shows it. */
function inodeOf(socket: Socket): string {
  const fd = (socket as unknown as { _handle: { fd: number } })._handle.fd;
  const link = readlinkSync(`/proc/self/fd/${fd}`);
  assert.match(link, /^socket:\[\d+\]$/);
  return link.slice(8, -1);
}

async function connected(server: Server, target: string | { port: number; host: string }): Promise<Socket> {
  const client = typeof target === 'string' ? connect(target) : connect(target.port, target.host);
  await new Promise<void>((resolve, reject) => {
    client.once('connect', resolve);
    client.once('error', reject);
  });
  assert.ok(server.listening);
  return client;
}

describe('socket owner: Unix sockets left out of "who holds a socket"', () => {
  it('lists a Unix socket of this namespace and never a TCP one, so a TCP socket always counts', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'paddock-sockets-'));
    const unixServer = createServer((s) => s.resume());
    const tcpServer = createServer((s) => s.resume());
    const clients: Socket[] = [];
    try {
      await new Promise<void>((r) => unixServer.listen(join(dir, 's'), r));
      await new Promise<void>((r) => tcpServer.listen(0, '127.0.0.1', r));
      const port = (tcpServer.address() as { port: number }).port;
      const unixClient = await connected(unixServer, join(dir, 's'));
      const tcpClient = await connected(tcpServer, { port, host: '127.0.0.1' });
      clients.push(unixClient, tcpClient);
      const unix = unixSocketInodes();
      assert.ok(unix.has(inodeOf(unixClient)), 'the Unix socket is listed');
      assert.ok(!unix.has(inodeOf(tcpClient)), 'the TCP socket is not');
    } finally {
      for (const c of clients) c.destroy();
      await new Promise((r) => unixServer.close(r));
      await new Promise((r) => tcpServer.close(r));
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
