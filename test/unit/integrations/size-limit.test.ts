import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { sizeLimitedFetch } from '../../../src/integrations/size-limit.js';

let server: Server;
let base: string;

before(async () => {
  server = createServer((req, res) => {
    if (req.url === '/json') {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ data: 'z'.repeat(200_000) }));
    } else if (req.url === '/events') {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      for (let i = 0; i < 50; i++) res.write(`data: ${'e'.repeat(10_000)}\n\n`);
      res.end();
    } else {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.end(`data: ${'e'.repeat(200_000)}\n\n`);
    }
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
after(() => new Promise<void>((r) => server.close(() => r())));

describe('sizeLimitedFetch', () => {
  test('fails a JSON body over the cap and reports the overflow', async () => {
    const overflows: number[] = [];
    const res = await sizeLimitedFetch(100_000, (n) => overflows.push(n))(`${base}/json`);
    await assert.rejects(res.text(), /exceeded 100000 bytes/);
    assert.equal(overflows.length, 1);
    assert.ok(overflows[0]! > 100_000);
  });

  test('lets a body under the cap through unchanged', async () => {
    const res = await sizeLimitedFetch(1_000_000, () => assert.fail('no overflow'))(`${base}/json`);
    assert.equal((JSON.parse(await res.text()) as { data: string }).data.length, 200_000);
  });

  test('counts an event stream per event: many small events pass, one big event fails', async () => {
    const limited = sizeLimitedFetch(100_000, () => {});
    const many = await limited(`${base}/events`);
    assert.equal((await many.text()).length, 50 * (10_000 + 8));
    const one = await limited(`${base}/big-event`);
    await assert.rejects(one.text(), /exceeded/);
  });
});
