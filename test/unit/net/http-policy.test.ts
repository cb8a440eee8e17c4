import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createHttpClient, type HopDecision, type HttpClient } from '../../../src/net/http-client.js';
import type { Sandbox } from '../../../src/policy/types.js';
import { isPaddockError } from '../../../src/shared/errors.js';
import { httpPolicy, type LocalServer, startServer, staticResolver } from './helpers.js';

function rejectsWith(code: string, rule?: RegExp) {
  return (e: unknown) => {
    assert.ok(isPaddockError(e), `expected a PaddockError, got ${String(e)}`);
    assert.equal(e.code, code, e.message);
    if (rule) assert.match(String(e.details.rule), rule);
    return true;
  };
}

describe('http client: policy on every hop', () => {
  let server: LocalServer;
  let other: LocalServer;
  const dns = staticResolver({
    localhost: ['127.0.0.1'],
    'evil.test': ['127.0.0.1'],
    'sub.example.test': ['127.0.0.1'],
  });
  let client: HttpClient;
  let policy: Sandbox;

  before(async () => {
    server = await startServer((req, res) => {
      if (req.url === '/to-other') {
        res.writeHead(302, { location: `http://localhost:${other.port}/landed` }).end();
      } else if (req.url?.startsWith('/chain/')) {
        const n = Number(req.url.slice('/chain/'.length));
        if (n > 0) res.writeHead(302, { location: `/chain/${n - 1}` }).end();
        else res.writeHead(200, { 'content-type': 'text/plain' }).end('end of chain');
      } else {
        res.writeHead(200, { 'content-type': 'text/plain; charset=utf-8', 'set-cookie': 'a=b' }).end('hello');
      }
    });
    other = await startServer((_req, res) =>
      res.writeHead(200, { 'content-type': 'text/plain' }).end('other'),
    );
    client = createHttpClient({ dns });
    policy = httpPolicy([`localhost:${server.port}`, `*.example.test:${server.port}`]);
  });
  after(async () => {
    await server.close();
    await other.close();
  });

  it('fetches from a host a rule allows and reports the rule', async () => {
    const decisions: HopDecision[] = [];
    const res = await client.request(
      { url: `http://localhost:${server.port}/hi` },
      { policy, onPolicyDecision: (d) => decisions.push(d) },
    );
    assert.equal(res.status, 200);
    assert.equal(res.body, 'hello');
    assert.equal(res.encoding, 'utf8');
    assert.equal(res.truncated, false);
    assert.equal(res.bytes, 5);
    assert.equal(res.headers['content-type'], 'text/plain; charset=utf-8');
    assert.equal(res.headers['set-cookie'], undefined, 'cookies set by a server are not passed on');
    assert.deepEqual(
      decisions.map((d) => d.allow),
      [true],
    );
    assert.match(decisions[0]?.rule ?? '', /localhost/);
  });

  it('denies a host no rule allows, before sending anything', async () => {
    const before = other.seen.length;
    await assert.rejects(
      client.request({ url: `http://localhost:${other.port}/` }, { policy }),
      rejectsWith('POLICY_DENIED'),
    );
    assert.equal(other.seen.length, before);
  });

  for (const [label, url] of [
    [
      'userinfo naming the allowed host (http://allowed@evil)',
      () => `http://localhost:${server.port}@evil.test:${server.port}/`,
    ],
    ['userinfo on the allowed host itself', () => `http://user:secret@localhost:${server.port}/`],
    ['a decimal IP literal (http://2130706433/)', () => `http://2130706433:${server.port}/`],
    [
      'an IPv4-mapped IPv6 literal (http://[::ffff:127.0.0.1]/)',
      () => `http://[::ffff:127.0.0.1]:${server.port}/`,
    ],
    ['a hex IP literal', () => `http://0x7f.0.0.1:${server.port}/`],
    ['an octal IP literal', () => `http://0177.0.0.1:${server.port}/`],
    ['a dotted IP literal that no rule names', () => `http://127.0.0.1:${server.port}/`],
    ['a host name that resolves to 127.0.0.1 without any rule', () => `http://evil.test:${server.port}/`],
    ['a wildcard-allowed name that resolves to loopback', () => `http://sub.example.test:${server.port}/`],
    ['the allowed host on another port', () => `http://localhost:${other.port}/`],
  ] as const) {
    it(`denies ${label}`, async () => {
      const seen = server.seen.length;
      await assert.rejects(client.request({ url: url() }, { policy }), rejectsWith('POLICY_DENIED'));
      assert.equal(server.seen.length, seen, 'the server must not be contacted');
    });
  }

  it('denies a redirect to a host no rule allows, without contacting it', async () => {
    const decisions: HopDecision[] = [];
    const seen = other.seen.length;
    await assert.rejects(
      client.request(
        { url: `http://localhost:${server.port}/to-other` },
        { policy, onPolicyDecision: (d) => decisions.push(d) },
      ),
      rejectsWith('POLICY_DENIED'),
    );
    assert.equal(other.seen.length, seen);
    assert.deepEqual(
      decisions.map((d) => [d.url, d.allow]),
      [
        [`http://localhost:${server.port}/to-other`, true],
        [`http://localhost:${other.port}/landed`, false],
      ],
    );
  });

  it('follows a redirect to an allowed host and lists it', async () => {
    const both = httpPolicy([`localhost:${server.port}`, `localhost:${other.port}`]);
    const res = await client.request({ url: `http://localhost:${server.port}/to-other` }, { policy: both });
    assert.equal(res.status, 200);
    assert.equal(res.body, 'other');
    assert.equal(res.url, `http://localhost:${other.port}/landed`);
    assert.deepEqual(res.redirects, [
      {
        status: 302,
        url: `http://localhost:${server.port}/to-other`,
        location: `http://localhost:${other.port}/landed`,
      },
    ]);
  });

  it('follows five redirects and refuses the sixth', async () => {
    const ok = await client.request({ url: `http://localhost:${server.port}/chain/5` }, { policy });
    assert.equal(ok.body, 'end of chain');
    assert.equal(ok.redirects.length, 5);
    await assert.rejects(
      client.request({ url: `http://localhost:${server.port}/chain/6` }, { policy }),
      rejectsWith('LIMIT_EXCEEDED'),
    );
  });

  it('connects to the address the policy checked even when DNS changes its answer', async () => {
    let answers = 0;
    const rebinding = staticResolver({
      // first answer is the local server; any later answer points somewhere unroutable
      localhost: () => (answers++ === 0 ? ['127.0.0.1'] : ['203.0.113.9']),
    });
    const pinned = createHttpClient({ dns: rebinding });
    const res = await pinned.request(
      { url: `http://localhost:${server.port}/`, timeoutMs: 5_000 },
      { policy },
    );
    assert.equal(res.body, 'hello');
    assert.deepEqual(
      rebinding.calls,
      ['localhost'],
      'one lookup per hop, shared by the policy and the connect',
    );
  });

  it('refuses framing headers a caller might use to reach another virtual host', async () => {
    const seen = server.seen.length;
    await assert.rejects(
      client.request({ url: `http://localhost:${server.port}/`, headers: { Host: 'evil.test' } }, { policy }),
      rejectsWith('INVALID_ARGUMENT'),
    );
    await assert.rejects(
      client.request(
        { url: `http://localhost:${server.port}/`, headers: { 'x-a': 'b\r\nx-c: d' } },
        { policy },
      ),
      rejectsWith('INVALID_ARGUMENT'),
    );
    assert.equal(server.seen.length, seen);
  });
});
