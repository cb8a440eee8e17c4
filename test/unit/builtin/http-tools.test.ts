import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createHttpClient } from '../../../src/net/http-client.js';
import { OWNER } from '../../../src/shared/principal.js';
import { createHttpGetTool } from '../../../src/tools/builtin/http-get.js';
import { createHttpPostTool } from '../../../src/tools/builtin/http-post.js';
import { httpPolicy, type LocalServer, startServer, staticResolver } from '../net/helpers.js';
import { createHarness, errorCode, type Harness, structured } from './harness.js';

describe('http_get and http_post through the gateway', () => {
  let server: LocalServer;
  let h: Harness;

  before(async () => {
    server = await startServer((req, res, body) => {
      if (req.url === '/missing')
        return void res.writeHead(404, { 'content-type': 'text/plain' }).end('not here');
      if (req.url === '/away') return void res.writeHead(302, { location: 'http://evil.test/' }).end();
      res.writeHead(200, { 'content-type': 'application/json' }).end(
        JSON.stringify({
          method: req.method,
          type: req.headers['content-type'] ?? null,
          body,
          ...(req.headers['x-tag'] === undefined ? {} : { tag: req.headers['x-tag'] }),
        }),
      );
    });
    const client = createHttpClient({
      dns: staticResolver({
        localhost: ['127.0.0.1'],
        'evil.test': ['127.0.0.1'],
        'sub.example.test': ['127.0.0.1'],
      }),
    });
    const allow = [`localhost:${server.port}`, `*.example.test:${server.port}`];
    h = await createHarness(httpPolicy(allow), () => [createHttpGetTool(client), createHttpPostTool(client)]);
  });
  after(async () => {
    await h.close();
    await server.close();
  });

  it('fetches an allowed URL and records the allowing rule on a successful audit row', async () => {
    const { outcome, row } = await h.call('http_get', { url: `http://localhost:${server.port}/x` });
    const result = structured(outcome);
    assert.equal(result.status, 200);
    assert.equal(JSON.parse(String(result.body)).method, 'GET');
    assert.equal(row.success, true);
    assert.match(String(row.policyRule), new RegExp(`localhost:${server.port}`));
  });

  it('returns a 404 as a successful call carrying the status', async () => {
    const { outcome, row } = await h.call('http_get', { url: `http://localhost:${server.port}/missing` });
    assert.equal(structured(outcome).status, 404);
    assert.equal(row.success, true);
  });

  for (const [label, url] of [
    ['a host no rule allows', () => 'http://example.org/'],
    ['http://allowed@evil', () => `http://localhost:${server.port}@evil.test:${server.port}/`],
    ['http://2130706433/', () => `http://2130706433:${server.port}/`],
    ['http://[::ffff:127.0.0.1]/', () => `http://[::ffff:127.0.0.1]:${server.port}/`],
    ['a name that resolves to 127.0.0.1 without a rule', () => `http://evil.test:${server.port}/`],
    ['a redirect to a host no rule allows', () => `http://localhost:${server.port}/away`],
  ] as const) {
    it(`denies ${label} with POLICY_DENIED and an audit row success=0`, async () => {
      const { outcome, row } = await h.call('http_get', { url: url() });
      assert.equal(errorCode(outcome), 'POLICY_DENIED');
      assert.equal(row.success, false);
      assert.equal(row.errorCode, 'POLICY_DENIED');
      assert.ok(row.policyRule, 'the deciding rule is recorded');
    });
  }

  it('denies a host an allow rule matches when it resolves to 127.0.0.1, naming the loopback address', async () => {
    const seen = server.seen.length;
    const { outcome, row } = await h.call('http_get', { url: `http://sub.example.test:${server.port}/` });
    assert.equal(errorCode(outcome), 'POLICY_DENIED');
    assert.equal(row.success, false);
    assert.equal(row.errorCode, 'POLICY_DENIED');
    assert.equal(row.policyRule, 'forbidden-address', 'the address check decided, not default-deny');
    assert.match(String(row.errorMessage), /sub\.example\.test resolves to 127\.0\.0\.1 \(loopback\)/);
    assert.equal(server.seen.length, seen, 'no request reached the server');
  });

  it('records both hops of a redirect that was denied on the second', async () => {
    const { row } = await h.call('http_get', { url: `http://localhost:${server.port}/away` });
    assert.match(String(row.policyRule), new RegExp(`localhost:${server.port}.* -> `));
  });

  it('posts JSON with an application/json content type', async () => {
    const { outcome } = await h.call('http_post', {
      url: `http://localhost:${server.port}/`,
      json: '{"a": [1, 2]}',
    });
    assert.deepEqual(JSON.parse(String(structured(outcome).body)), {
      method: 'POST',
      type: 'application/json',
      body: '{"a": [1, 2]}',
    });
  });

  it('refuses json text that does not parse, naming the field, before any request', async () => {
    const seen = server.seen.length;
    const { outcome, row } = await h.call('http_post', {
      url: `http://localhost:${server.port}/`,
      json: '{a:1}',
    });
    assert.equal(errorCode(outcome), 'INVALID_ARGUMENT');
    assert.match(outcome.ok ? '' : outcome.error.message, /json is not valid JSON/);
    assert.equal(row.success, false);
    assert.equal(server.seen.length, seen);
  });

  it('sends header pairs, joining the values of a repeated name', async () => {
    const { outcome } = await h.call('http_post', {
      url: `http://localhost:${server.port}/`,
      body: 'x',
      headers: [
        { name: 'Content-Type', value: 'text/csv' },
        { name: 'x-tag', value: 'a' },
        { name: 'X-Tag', value: 'b' },
      ],
    });
    const echoed = JSON.parse(String(structured(outcome).body));
    assert.equal(echoed.type, 'text/csv');
    assert.equal(echoed.tag, 'a, b');
  });

  it('posts a raw body with the given content type', async () => {
    const { outcome } = await h.call('http_post', {
      url: `http://localhost:${server.port}/`,
      body: 'a=1&b=2',
      contentType: 'application/x-www-form-urlencoded',
    });
    assert.deepEqual(JSON.parse(String(structured(outcome).body)), {
      method: 'POST',
      type: 'application/x-www-form-urlencoded',
      body: 'a=1&b=2',
    });
  });

  it('rejects arguments outside the schema before any request', async () => {
    const seen = server.seen.length;
    const url = `http://localhost:${server.port}/`;
    for (const input of [
      { url, extra: true },
      { url, maxBytes: 10 * 1024 * 1024 + 1 },
      { url, timeoutMs: 10 },
      { url: 'ftp://localhost/' },
      { url, headers: { accept: 'text/plain' } },
      { url, headers: [{ name: 'bad name', value: 'x' }] },
    ]) {
      const { outcome, row } = await h.call('http_get', input);
      assert.equal(errorCode(outcome), 'INVALID_ARGUMENT', JSON.stringify(input));
      assert.equal(row.success, false);
    }
    const both = await h.call('http_post', { url, body: 'x', json: '{}' });
    assert.equal(errorCode(both.outcome), 'INVALID_ARGUMENT');
    assert.equal(server.seen.length, seen);
  });

  it('describes itself as a read-only builtin and http_post as not read-only', () => {
    const [get, post] = h.gateway.listTools({
      principal: OWNER,
      caller: 'cli',
      via: 'direct',
      attended: true,
    });
    assert.ok(get && post);
    assert.equal(get.name, 'http_get');
    assert.equal(get.source, 'builtin');
    assert.deepEqual(get.toolsets, ['builtin']);
    assert.equal(get.annotations.readOnlyHint, true);
    assert.equal(post.annotations.readOnlyHint, false);
    for (const tool of [get, post]) {
      assert.equal((tool.inputSchema as { additionalProperties: boolean }).additionalProperties, false);
    }
  });
});
