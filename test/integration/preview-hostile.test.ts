import assert from 'node:assert/strict';
import { createServer, get, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, it } from 'node:test';
import type { ComputerManager } from '../../src/computer/manager.js';
import { PreviewRelay } from '../../src/web/preview/relay.js';
import { pollUntil } from '../helpers/poll.js';
import { launchRunning, withComputer } from '../unit/computer/fixture.js';

/** A guest server that answers every request with a status line Node cannot send on (099). */
const BAD_STATUS_SERVER = String.raw`
import socket
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", 8000)); s.listen(8)
while True:
    c, _ = s.accept()
    c.recv(65536)
    c.sendall(b"HTTP/1.1 099 Nope\r\nContent-Length: 2\r\n\r\nhi")
    c.close()
`;

function fetchStatus(url: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    get(url, (res) => {
      let body = '';
      res.on('data', (d: Buffer) => {
        body += d.toString();
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    }).on('error', reject);
  });
}

describe('the preview against a hostile guest server', () => {
  it('answers 502 to a status line Node cannot relay, and keeps the server running', async () => {
    await withComputer({}, async ({ manager }: { manager: ComputerManager }) => {
      await launchRunning(manager, 'python');
      await manager.runCommand({
        script: `cat > /tmp/bad.py <<'PY'\n${BAD_STATUS_SERVER}\nPY\n(python3 /tmp/bad.py >/dev/null 2>&1 &)`,
        waitMs: 2000,
        timeoutMs: 60_000,
      });
      const relay = new PreviewRelay(manager.preview);
      const server: Server = createServer((req, res) => void relay.handlePreview(req, res));
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      try {
        const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}/preview`;
        const answer = await pollUntil(
          async () => {
            const r = await fetchStatus(`${base}/`);
            // until the guest server listens (before that: no computer yet, or nothing on the port)
            return r.status === 503 || r.body.includes('Nothing answers') ? null : r;
          },
          'the guest server to answer',
          10_000,
        );
        assert.equal(answer.status, 502);
        assert.match(answer.body, /not a valid status code/);
        // the process survived: the relay still answers
        assert.equal((await fetchStatus(`${base}/`)).status, 502);
      } finally {
        server.closeAllConnections();
        await new Promise((r) => server.close(r));
      }
    });
  });
});
