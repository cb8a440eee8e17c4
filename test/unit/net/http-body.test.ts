import assert from 'node:assert/strict';
import type { ServerResponse } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { createHttpClient, type HttpClient } from '../../../src/net/http-client.js';
import type { Sandbox } from '../../../src/policy/types.js';
import { isPaddockError } from '../../../src/shared/errors.js';
import { pollUntil } from '../../helpers/poll.js';
import { httpPolicy, type LocalServer, startServer, staticResolver } from './helpers.js';

const MIB = 1024 * 1024;
const BINARY = Buffer.from(Array.from({ length: 256 }, (_, i) => i));

/** Writes `total` bytes (or forever) in 64 KiB chunks, honouring backpressure. */
function pump(res: ServerResponse, total: number): void {
  const chunk = Buffer.alloc(64 * 1024, 0x61);
  let sent = 0;
  const write = () => {
    while (sent < total && !res.destroyed) {
      const piece = total - sent < chunk.length ? chunk.subarray(0, total - sent) : chunk;
      sent += piece.length;
      if (!res.write(piece)) {
        res.once('drain', write);
        return;
      }
    }
    if (sent >= total) res.end();
  };
  write();
}

function code(expected: string, message?: RegExp) {
  return (e: unknown) => {
    assert.ok(isPaddockError(e), `expected a PaddockError, got ${String(e)}`);
    assert.equal(e.code, expected, e.message);
    if (message) assert.match(e.message, message);
    return true;
  };
}

describe('http client: bodies, limits and time', () => {
  let server: LocalServer;
  let client: HttpClient;
  let policy: Sandbox;

  before(async () => {
    server = await startServer((req, res) => {
      switch (req.url) {
        case '/big':
          res.writeHead(200, { 'content-type': 'text/plain', 'content-length': String(5 * 1000 * 1000) });
          return pump(res, 5 * 1000 * 1000);
        case '/endless':
          res.writeHead(200, { 'content-type': 'application/octet-stream' });
          return pump(res, Number.POSITIVE_INFINITY);
        case '/exact':
          return void res.writeHead(200, { 'content-type': 'text/plain' }).end('x'.repeat(1000));
        case '/png':
          return void res.writeHead(200, { 'content-type': 'image/png' }).end(BINARY);
        case '/untyped':
          return void res.writeHead(200).end(BINARY);
        case '/json':
          return void res
            .writeHead(404, { 'content-type': 'application/problem+json' })
            .end('{"title":"nope"}');
        case '/latin1':
          return void res
            .writeHead(200, { 'content-type': 'text/plain; charset=ISO-8859-1' })
            .end(Buffer.from([0x63, 0x61, 0x66, 0xe9]));
        case '/bad-utf8':
          return void res
            .writeHead(200, { 'content-type': 'text/plain' })
            .end(Buffer.from([0x61, 0xff, 0xfe]));
        case '/euro':
          return void res
            .writeHead(200, { 'content-type': 'text/plain; charset=utf-8' })
            .end('€'.repeat(1000));
        case '/hang':
          return; // never answers
        case '/stall-body':
          res.writeHead(200, { 'content-type': 'text/plain', 'content-length': '100' });
          return void res.write('only part of it');
        default:
          res.writeHead(200, { 'content-type': 'text/plain' }).end('ok');
      }
    });
    client = createHttpClient({ dns: staticResolver({}) });
    policy = httpPolicy([`127.0.0.1:${server.port}`]);
  });
  after(() => server.close());

  const get = (path: string, extra: { maxBytes?: number; timeoutMs?: number } = {}) =>
    client.request({ url: `${server.origin}${path}`, ...extra }, { policy });

  it('cuts a 5 MB body at the default 1 MiB and flags it truncated', async () => {
    const res = await get('/big');
    assert.equal(res.truncated, true);
    assert.equal(res.bytes, MIB);
    assert.equal(res.body.length, MIB);
  });

  it('returns from a body that never ends, holding only maxBytes', async () => {
    const res = await get('/endless', { maxBytes: 100_000 });
    assert.equal(res.truncated, true);
    assert.equal(res.bytes, 100_000);
    assert.equal(Buffer.from(res.body, 'base64').length, 100_000);
  });

  it('does not flag a body of exactly maxBytes as truncated', async () => {
    const res = await get('/exact', { maxBytes: 1000 });
    assert.equal(res.truncated, false);
    assert.equal(res.bytes, 1000);
  });

  it('refuses a maxBytes above the configured limit', async () => {
    await assert.rejects(get('/exact', { maxBytes: 10 * MIB + 1 }), code('INVALID_ARGUMENT'));
  });

  it('returns binary content as base64 that decodes to the exact bytes', async () => {
    const res = await get('/png');
    assert.equal(res.encoding, 'base64');
    assert.deepEqual(Buffer.from(res.body, 'base64'), BINARY);
    assert.equal(res.bytes, 256);
    const untyped = await get('/untyped');
    assert.equal(untyped.encoding, 'base64');
  });

  it('returns JSON as text, and a 404 as a response rather than an error', async () => {
    const res = await get('/json');
    assert.equal(res.status, 404);
    assert.equal(res.encoding, 'utf8');
    assert.deepEqual(JSON.parse(res.body), { title: 'nope' });
  });

  it('decodes a declared charset, and falls back to base64 for invalid UTF-8', async () => {
    assert.equal((await get('/latin1')).body, 'café');
    const bad = await get('/bad-utf8');
    assert.equal(bad.encoding, 'base64');
    assert.deepEqual(Buffer.from(bad.body, 'base64'), Buffer.from([0x61, 0xff, 0xfe]));
  });

  it('cuts UTF-8 text on a character boundary', async () => {
    const res = await get('/euro', { maxBytes: 100 });
    assert.equal(res.truncated, true);
    assert.equal(res.encoding, 'utf8');
    assert.equal(res.body, '€'.repeat(33));
    assert.equal(res.bytes, 99);
  });

  it('fails with TIMEOUT when the server does not answer within timeoutMs', async () => {
    await assert.rejects(get('/hang', { timeoutMs: 200 }), code('TIMEOUT', /timeoutMs/));
  });

  it('fails with TIMEOUT when the body stalls', async () => {
    await assert.rejects(get('/stall-body', { timeoutMs: 300 }), code('TIMEOUT'));
  });

  it("never runs past the caller's deadline, even with a longer timeoutMs", async () => {
    await assert.rejects(
      client.request(
        { url: `${server.origin}/hang`, timeoutMs: 60_000 },
        { policy, deadline: Date.now() + 200 },
      ),
      code('TIMEOUT', /deadline/),
    );
  });

  it('stops when the caller aborts', async () => {
    const controller = new AbortController();
    const seen = server.seen.length;
    const pending = client.request({ url: `${server.origin}/hang` }, { policy, signal: controller.signal });
    await pollUntil(() => server.seen.length > seen, 'the request to arrive');
    controller.abort();
    await assert.rejects(pending, code('TIMEOUT', /cancelled/));
  });

  it('reports a refused connection as UPSTREAM_ERROR', async () => {
    const closed = await startServer(() => {});
    const port = closed.port;
    await closed.close();
    await assert.rejects(
      client.request({ url: `http://127.0.0.1:${port}/` }, { policy: httpPolicy([`127.0.0.1:${port}`]) }),
      (e: unknown) => {
        assert.ok(isPaddockError(e));
        assert.equal(e.code, 'UPSTREAM_ERROR');
        assert.equal(e.details.cause, 'ECONNREFUSED');
        return true;
      },
    );
  });

  it('refuses a request body over the limit before connecting', async () => {
    const small = createHttpClient({ dns: staticResolver({}), maxRequestBytes: 1024 });
    const seen = server.seen.length;
    await assert.rejects(
      small.request({ method: 'POST', url: `${server.origin}/`, body: 'x'.repeat(1025) }, { policy }),
      code('LIMIT_EXCEEDED'),
    );
    assert.equal(server.seen.length, seen);
  });
});
