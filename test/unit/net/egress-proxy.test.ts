import assert from 'node:assert/strict';
import { type AddressInfo, connect, createServer } from 'node:net';
import { after, before, describe, it } from 'node:test';
import type { AuditStore } from '../../../src/audit/types.js';
import { pollUntil } from '../../helpers/poll.js';
import { rawExchange, socksRequest, startSilentServer, startTestProxy } from './egress-helpers.js';
import { type LocalServer, startServer } from './helpers.js';

function status(reply: Buffer): number {
  return Number(/^HTTP\/1\.1 (\d{3})/.exec(reply.toString('latin1'))?.[1] ?? 0);
}

describe('egress proxy (HTTP forward, CONNECT, SOCKS5) against stub servers on 127.0.0.1', () => {
  let stub: LocalServer;
  let other: LocalServer;
  before(async () => {
    stub = await startServer((req, res) => {
      if (req.url === '/redirect') {
        res.writeHead(302, { location: 'http://denied.test/' });
        res.end();
        return;
      }
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.end(`hello from stub ${req.method} ${req.url}`);
    });
    other = await startServer((_req, res) => res.end('other stub'));
  });
  after(async () => {
    await stub.close();
    await other.close();
  });

  it('forwards an absolute-URI request to a name mapped by policy.http.hosts and audits it with bytes each way', async () => {
    const p = await startTestProxy({
      allow: [`stub.test:${stub.port}`],
      hosts: { 'stub.test': '127.0.0.1' },
    });
    try {
      const reply = await rawExchange(
        p.port,
        `GET http://stub.test:${stub.port}/hi?q=1 HTTP/1.1\r\nHost: stub.test:${stub.port}\r\nProxy-Connection: keep-alive\r\nConnection: close\r\n\r\n`,
      );
      assert.equal(status(reply), 200);
      assert.match(reply.toString(), /hello from stub GET \/hi\?q=1/);
      assert.equal(stub.seen.at(-1)?.headers['proxy-connection'], undefined);
      const rows = p.rows();
      assert.equal(rows.length, 1);
      const row = rows[0]!;
      assert.equal(row.success, true);
      assert.equal(row.tool, 'egress');
      assert.equal(row.policyRule, `http.allow[0]=stub.test:${stub.port}`);
      const input = JSON.parse(row.input) as Record<string, unknown>;
      assert.equal(input.host, 'stub.test');
      assert.equal(input.kind, 'http');
      assert.ok(row.outputBytes > 0, 'bytes received are the row’s output bytes');
      assert.equal(row.sentBytes, 0, 'a GET sends no body: bytes sent have their own column');
      assert.equal(input.bytesReceived, undefined);
      assert.equal(row.jobId, 'anonymous');
      assert.equal(row.parentId, 'inv_parent_anonymous');
    } finally {
      await p.close();
    }
  });

  it('refuses a host no rule allows with 403 naming the rule and what to change, and audits the refusal', async () => {
    const p = await startTestProxy({
      allow: [`stub.test:${stub.port}`],
      hosts: { 'stub.test': '127.0.0.1', 'evil.test': '127.0.0.1' },
    });
    try {
      const reply = await rawExchange(
        p.port,
        `GET http://evil.test:${stub.port}/ HTTP/1.1\r\nHost: evil.test\r\n\r\n`,
      );
      assert.equal(status(reply), 403);
      assert.match(reply.toString(), /rule default-deny/);
      assert.match(reply.toString(), /policy\.http\.allow/);
      assert.match(reply.toString(), /x-paddock-egress-rule: default-deny/i);
      const row = p.rows().at(-1)!;
      assert.equal(row.success, false);
      assert.equal(row.errorCode, 'POLICY_DENIED');
      assert.equal(row.policyRule, 'default-deny');
      assert.equal(p.refusals.length, 1);
      assert.equal(stub.seen.filter((r) => r.headers.host === 'evil.test').length, 0);
    } finally {
      await p.close();
    }
  });

  it('refuses IP literals in every notation unless a rule names the address', async () => {
    const p = await startTestProxy({ allow: ['stub.test'] });
    try {
      for (const host of [
        '127.0.0.1',
        '0x7f.0.0.1',
        '2130706433',
        '0177.0.0.1',
        '[::1]',
        '[::ffff:127.0.0.1]',
        '169.254.169.254',
      ]) {
        const reply = await rawExchange(
          p.port,
          `CONNECT ${host}:${stub.port} HTTP/1.1\r\nHost: ${host}\r\n\r\n`,
        );
        assert.equal(status(reply), 403, host);
      }
      assert.ok(p.rows().every((r) => !r.success && r.errorCode === 'POLICY_DENIED'));
      assert.equal(p.rows().length, 7);
    } finally {
      await p.close();
    }
    const named = await startTestProxy({ allow: [`127.0.0.1:${stub.port}`] });
    try {
      const reply = await rawExchange(
        named.port,
        `GET http://127.0.0.1:${stub.port}/ HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`,
      );
      assert.equal(status(reply), 200);
    } finally {
      await named.close();
    }
  });

  it('refuses a name that resolves to a private or loopback address, and connects only to the address it checked', async () => {
    let answers = 0;
    const dns = {
      lookup: async (host: string) => {
        answers += 1;
        if (host === 'private.test') return ['10.1.2.3'];
        if (host === 'loop.test') return ['127.0.0.1'];
        return ['93.184.216.34'];
      },
    };
    const p = await startTestProxy({ allow: ['private.test:8080', 'loop.test:8080'], dns });
    try {
      for (const host of ['private.test', 'loop.test']) {
        const reply = await rawExchange(p.port, `CONNECT ${host}:8080 HTTP/1.1\r\n\r\n`);
        assert.equal(status(reply), 403, host);
        assert.match(reply.toString(), /forbidden-address/);
      }
      assert.equal(answers, 2);
    } finally {
      await p.close();
    }
  });

  it('tunnels CONNECT to an allowed name and refuses a CONNECT to a port no rule names', async () => {
    const p = await startTestProxy({
      allow: [`stub.test:${stub.port}`, 'plain.test'],
      hosts: { 'stub.test': '127.0.0.1', 'plain.test': '127.0.0.1' },
    });
    try {
      const reply = await rawExchange(
        p.port,
        `CONNECT stub.test:${stub.port} HTTP/1.1\r\nHost: stub.test\r\n\r\nGET /tunnel HTTP/1.1\r\nHost: stub.test\r\nConnection: close\r\n\r\n`,
      );
      assert.match(reply.toString(), /^HTTP\/1\.1 200 Connection Established/);
      assert.match(reply.toString(), /hello from stub GET \/tunnel/);
      const denied = await rawExchange(p.port, `CONNECT plain.test:${stub.port} HTTP/1.1\r\n\r\n`);
      assert.equal(status(denied), 403);
      assert.match(denied.toString(), /covers only port the default/);
      const rows = p.rows();
      assert.equal(rows[0]!.success, true);
      assert.ok((rows[0]!.sentBytes ?? 0) > 0 && rows[0]!.outputBytes > 0);
      assert.equal(rows[1]!.success, false);
    } finally {
      await p.close();
    }
  });

  it('decides every request anew: a redirect to a denied host passes through and the follow-up is refused', async () => {
    const p = await startTestProxy({
      allow: [`stub.test:${stub.port}`],
      hosts: { 'stub.test': '127.0.0.1', 'denied.test': '127.0.0.1' },
    });
    try {
      const first = await rawExchange(
        p.port,
        `GET http://stub.test:${stub.port}/redirect HTTP/1.1\r\nHost: stub.test\r\nConnection: close\r\n\r\n`,
      );
      assert.equal(status(first), 302);
      const second = await rawExchange(
        p.port,
        'GET http://denied.test/ HTTP/1.1\r\nHost: denied.test\r\n\r\n',
      );
      assert.equal(status(second), 403);
      assert.deepEqual(
        p.rows().map((r) => r.success),
        [true, false],
      );
    } finally {
      await p.close();
    }
  });

  it('answers a malformed request line with 400 and audits it', async () => {
    const p = await startTestProxy({ allow: ['stub.test'] });
    try {
      for (const line of [
        'NOT A REQUEST\r\n\r\n',
        'GET\r\n\r\n',
        'CONNECT stub.test HTTP/1.1\r\n\r\n',
        'GET /relative HTTP/1.1\r\nHost: x\r\n\r\n',
      ]) {
        const reply = await rawExchange(p.port, line);
        assert.equal(status(reply), 400, JSON.stringify(line));
      }
      assert.equal(p.rows().length, 4);
      assert.ok(
        p.rows().every((r) => r.errorCode === 'INVALID_ARGUMENT' && r.policyRule === 'request-syntax'),
      );
    } finally {
      await p.close();
    }
  });

  it('requires valid proxy credentials when jobs were given some, and names the job in the row', async () => {
    const p = await startTestProxy({
      allow: [`stub.test:${stub.port}`],
      hosts: { 'stub.test': '127.0.0.1' },
      jobs: { 'g1.job1': 'tok' },
    });
    try {
      const none = await rawExchange(
        p.port,
        `GET http://stub.test:${stub.port}/ HTTP/1.1\r\nHost: stub.test\r\n\r\n`,
      );
      assert.equal(status(none), 407);
      const wrong = Buffer.from('g1.job1:nope').toString('base64');
      const bad = await rawExchange(
        p.port,
        `CONNECT stub.test:${stub.port} HTTP/1.1\r\nProxy-Authorization: Basic ${wrong}\r\n\r\n`,
      );
      assert.equal(status(bad), 407);
      const right = Buffer.from('g1.job1:tok').toString('base64');
      const ok = await rawExchange(
        p.port,
        `GET http://stub.test:${stub.port}/ HTTP/1.1\r\nHost: stub.test\r\nProxy-Authorization: Basic ${right}\r\nConnection: close\r\n\r\n`,
      );
      assert.equal(status(ok), 200);
      assert.equal(stub.seen.at(-1)?.headers['proxy-authorization'], undefined);
      const rows = p.rows();
      assert.deepEqual(
        rows.map((r) => [r.success, r.jobId]),
        [
          [false, null],
          [false, null],
          [true, 'g1.job1'],
        ],
      );
    } finally {
      await p.close();
    }
  });

  it('relays SOCKS5 to an allowed name, and refuses a raw address no rule names with a SOCKS error reply', async () => {
    const p = await startTestProxy({
      allow: [`stub.test:${stub.port}`],
      hosts: { 'stub.test': '127.0.0.1' },
    });
    try {
      const http = Buffer.from('GET /socks HTTP/1.1\r\nHost: stub.test\r\nConnection: close\r\n\r\n');
      const reply = await rawExchange(
        p.port,
        Buffer.concat([socksRequest({ name: 'stub.test', port: stub.port }), http]),
      );
      assert.deepEqual([...reply.subarray(0, 4)], [0x05, 0x00, 0x05, 0x00]);
      assert.match(reply.toString('latin1'), /hello from stub GET \/socks/);
      const raw = await rawExchange(p.port, socksRequest({ ipv4: '127.0.0.1', port: stub.port }));
      assert.deepEqual([...raw.subarray(0, 4)], [0x05, 0x00, 0x05, 0x02]);
      const rows = p.rows();
      assert.equal(rows.length, 2);
      assert.equal(rows[0]!.success, true);
      assert.equal(rows[1]!.policyRule, 'ip-literal');
      assert.match(p.refusals[0]!, /127\.0\.0\.1/);
    } finally {
      await p.close();
    }
  });

  it('accepts SOCKS5 username/password credentials of a job and refuses unknown ones', async () => {
    const p = await startTestProxy({
      allow: [`stub.test:${stub.port}`],
      hosts: { 'stub.test': '127.0.0.1' },
      jobs: { 'g1.job2': 'pw' },
    });
    try {
      const http = Buffer.from('GET / HTTP/1.1\r\nHost: stub.test\r\nConnection: close\r\n\r\n');
      const good = await rawExchange(
        p.port,
        Buffer.concat([
          socksRequest({ name: 'stub.test', port: stub.port }, { user: 'g1.job2', password: 'pw' }),
          http,
        ]),
      );
      assert.deepEqual([...good.subarray(0, 6)], [0x05, 0x02, 0x01, 0x00, 0x05, 0x00]);
      const bad = await rawExchange(
        p.port,
        socksRequest({ name: 'stub.test', port: stub.port }, { user: 'g1.job2', password: 'xx' }),
      );
      assert.deepEqual([...bad], [0x05, 0x02, 0x01, 0x01]);
      assert.deepEqual(
        p.rows().map((r) => [r.success, r.jobId]),
        [
          [true, 'g1.job2'],
          [false, null],
        ],
      );
    } finally {
      await p.close();
    }
  });

  it('closes a request to an upstream that never answers after the idle time, with 504 and a TIMEOUT row', async () => {
    const silent = await startSilentServer();
    const p = await startTestProxy({
      allow: [`silent.test:${silent.port}`],
      hosts: { 'silent.test': '127.0.0.1' },
      limits: { idleTimeoutMs: 300 },
    });
    try {
      const reply = await rawExchange(
        p.port,
        `GET http://silent.test:${silent.port}/ HTTP/1.1\r\nHost: silent.test\r\n\r\n`,
      );
      assert.equal(status(reply), 504);
      const tunnel = await rawExchange(p.port, `CONNECT silent.test:${silent.port} HTTP/1.1\r\n\r\n`);
      assert.match(tunnel.toString(), /200 Connection Established/);
      // rows are written when the connections open and completed when they end
      await pollUntil(() => p.rows().filter((r) => r.state === 'ended').length === 2, 'both rows completed');
      assert.deepEqual(
        p.rows().map((r) => r.errorCode),
        ['TIMEOUT', 'TIMEOUT'],
      );
      assert.equal(silent.accepted(), 2);
    } finally {
      await p.close();
      await silent.close();
    }
  });

  it('bounds 10,000 connection attempts in a loop: the excess is refused at once, every attempt answered and audited', async () => {
    const p = await startTestProxy({
      allow: [`stub.test:${stub.port}`],
      hosts: { 'stub.test': '127.0.0.1' },
      limits: { maxConnections: 8, connectionsPerSecond: 50 },
    });
    const before = stub.seen.length;
    try {
      const request = `GET http://stub.test:${stub.port}/flood HTTP/1.1\r\nHost: stub.test\r\nConnection: close\r\n\r\n`;
      const statuses = new Map<number, number>();
      const t0 = performance.now();
      for (let batch = 0; batch < 40; batch++) {
        const replies = await Promise.all(
          Array.from({ length: 250 }, () => rawExchange(p.port, request, 60_000)),
        );
        for (const r of replies) statuses.set(status(r), (statuses.get(status(r)) ?? 0) + 1);
      }
      const seconds = (performance.now() - t0) / 1000;
      const reached = stub.seen.length - before;
      assert.equal((statuses.get(200) ?? 0) + (statuses.get(503) ?? 0), 10_000);
      assert.equal(reached, statuses.get(200));
      assert.ok(reached <= 50 + Math.ceil(seconds * 50) + 1, `${reached} reached upstream in ${seconds} s`);
      assert.ok((statuses.get(503) ?? 0) > 0);
      assert.equal(p.rows().length, 10_000);
      assert.ok(p.refusals.length < 20, 'the computer log gets a summary, not 10,000 lines');
    } finally {
      await p.close();
    }
  });

  it('narrows policy.http by the profile network.allow', async () => {
    const p = await startTestProxy({
      allow: [`stub.test:${stub.port}`, `other.test:${other.port}`],
      hosts: { 'stub.test': '127.0.0.1', 'other.test': '127.0.0.1' },
      networkAllow: [`stub.test:${stub.port}`],
    });
    try {
      const ok = await rawExchange(
        p.port,
        `GET http://stub.test:${stub.port}/ HTTP/1.1\r\nHost: stub.test\r\nConnection: close\r\n\r\n`,
      );
      assert.equal(status(ok), 200);
      const denied = await rawExchange(
        p.port,
        `GET http://other.test:${other.port}/ HTTP/1.1\r\nHost: other.test\r\n\r\n`,
      );
      assert.equal(status(denied), 403);
      assert.match(denied.toString(), /network\.allow of profile "test"/);
      assert.match(p.rows().at(-1)!.policyRule ?? '', /^profile:/);
    } finally {
      await p.close();
    }
  });

  it('writes an allowed tunnel’s row when it opens (running, so a crash leaves it) and completes it with the bytes each way when it ends', async () => {
    const echo = createServer((s) => {
      s.on('error', () => undefined);
      s.pipe(s);
    });
    await new Promise<void>((resolve) => echo.listen(0, '127.0.0.1', resolve));
    const echoPort = (echo.address() as AddressInfo).port;
    const p = await startTestProxy({ allow: [`echo.test:${echoPort}`], hosts: { 'echo.test': '127.0.0.1' } });
    const client = connect({ host: '127.0.0.1', port: p.port });
    try {
      let received = '';
      client.setEncoding('latin1');
      client.on('data', (d: string) => {
        received += d;
      });
      client.write(`CONNECT echo.test:${echoPort} HTTP/1.1\r\nHost: echo.test\r\n\r\n`);
      await pollUntil(() => received.includes('200 Connection Established'), 'the tunnel to open');
      client.write('ping-1234567890');
      await pollUntil(() => received.endsWith('ping-1234567890'), 'the echo through the tunnel');
      const open = p.rows();
      assert.equal(open.length, 1, 'the row exists while the tunnel is open');
      assert.equal(open[0]!.state, 'running');
      assert.equal(open[0]!.policyRule, null, 'the outcome is not written yet');
      assert.equal(JSON.parse(open[0]!.input).host, 'echo.test');
      client.end();
      await pollUntil(() => p.rows()[0]?.state === 'ended', 'the row to be completed');
      const [row] = p.rows();
      assert.equal(p.rows().length, 1, 'completed in place, not a second row');
      assert.equal(row!.id, open[0]!.id);
      assert.equal(row!.success, true);
      assert.equal(row!.sentBytes, 'ping-1234567890'.length);
      assert.equal(row!.outputBytes, 'ping-1234567890'.length);
      assert.equal(row!.policyRule, `http.allow[0]=echo.test:${echoPort}`);
    } finally {
      client.destroy();
      await p.close();
      await new Promise<void>((resolve) => echo.close(() => resolve()));
    }
  });

  it('writes a refused connection as one finished row with no bytes sent', async () => {
    const p = await startTestProxy({ allow: [] });
    try {
      const denied = await rawExchange(p.port, 'CONNECT nowhere.test:443 HTTP/1.1\r\n\r\n');
      assert.equal(status(denied), 403);
      const rows = p.rows();
      assert.equal(rows.length, 1);
      assert.equal(rows[0]!.state, 'ended');
      assert.equal(rows[0]!.success, false);
      assert.equal(rows[0]!.sentBytes, 0);
    } finally {
      await p.close();
    }
  });

  it('refuses an allowed connection whose audit row cannot be written: no byte goes upstream without its row', async () => {
    const failing = {
      begin: () => {
        throw new Error('disk full');
      },
      record: () => undefined,
      complete: () => undefined,
    } as unknown as AuditStore;
    const p = await startTestProxy({
      allow: [`stub.test:${stub.port}`],
      hosts: { 'stub.test': '127.0.0.1' },
      session: { audit: failing },
    });
    try {
      const before = stub.seen.length;
      const reply = await rawExchange(
        p.port,
        `GET http://stub.test:${stub.port}/unaudited HTTP/1.1\r\nHost: stub.test\r\nConnection: close\r\n\r\n`,
      );
      assert.equal(status(reply), 503);
      assert.match(reply.toString(), /audit row could not be written/);
      const tunnel = await rawExchange(p.port, `CONNECT stub.test:${stub.port} HTTP/1.1\r\n\r\n`);
      assert.equal(status(tunnel), 503);
      assert.equal(stub.seen.length, before, 'the upstream saw nothing');
      assert.equal(p.refusals.length, 2);
      assert.match(p.refusals[0]!, /disk full/);
    } finally {
      await p.close();
    }
  });
});
