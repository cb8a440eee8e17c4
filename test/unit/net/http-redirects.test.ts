import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createHttpClient, type HttpClient } from '../../../src/net/http-client.js';
import type { Sandbox } from '../../../src/policy/types.js';
import { httpPolicy, type LocalServer, startServer, staticResolver } from './helpers.js';

describe('http client: redirects', () => {
  let a: LocalServer;
  let b: LocalServer;
  let client: HttpClient;
  let policy: Sandbox;
  const credentials = {
    authorization: 'Bearer secret-token',
    cookie: 'session=s3cret',
    'proxy-authorization': 'Basic cHJveHk6cHc=',
    'x-trace': 'kept',
  };

  before(async () => {
    b = await startServer((_req, res, body) =>
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ echoed: body })),
    );
    a = await startServer((req, res, body) => {
      const match = /^\/(\d{3})\/(same|other-host|other-port)$/.exec(req.url ?? '');
      if (match) {
        const [, status, where] = match;
        const location =
          where === 'same'
            ? '/landed'
            : where === 'other-host'
              ? `http://127.0.0.1:${a.port}/landed`
              : `http://localhost:${b.port}/landed`;
        res.writeHead(Number(status), { location }).end();
        return;
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ echoed: body }));
    });
    client = createHttpClient({ dns: staticResolver({ localhost: ['127.0.0.1'] }) });
    policy = httpPolicy([`localhost:${a.port}`, `localhost:${b.port}`, `127.0.0.1:${a.port}`]);
  });
  after(async () => {
    await a.close();
    await b.close();
  });

  const post = (path: string, headers: Record<string, string> = {}) =>
    client.request(
      {
        method: 'POST',
        url: `http://localhost:${a.port}${path}`,
        headers: { 'content-type': 'text/plain', ...headers },
        body: 'payload',
      },
      { policy },
    );

  for (const status of [301, 302, 303]) {
    it(`turns a POST into a GET without a body after ${status}`, async () => {
      const res = await post(`/${status}/same`);
      assert.equal(res.status, 200);
      const landed = a.seen.at(-1);
      assert.equal(landed?.method, 'GET');
      assert.equal(landed?.url, '/landed');
      assert.equal(landed?.body, '');
      assert.equal(landed?.headers['content-type'], undefined);
    });
  }

  for (const status of [307, 308]) {
    it(`repeats the POST with its body after ${status}`, async () => {
      const res = await post(`/${status}/same`);
      assert.equal(res.status, 200);
      assert.deepEqual(JSON.parse(res.body), { echoed: 'payload' });
      const landed = a.seen.at(-1);
      assert.equal(landed?.method, 'POST');
      assert.equal(landed?.headers['content-type'], 'text/plain');
    });
  }

  it('keeps credentials on a same-origin redirect', async () => {
    await post('/307/same', credentials);
    const landed = a.seen.at(-1);
    assert.equal(landed?.url, '/landed');
    assert.equal(landed?.headers.authorization, credentials.authorization);
    assert.equal(landed?.headers.cookie, credentials.cookie);
  });

  for (const [where, server] of [
    ['another host name', () => a],
    ['another port', () => b],
  ] as const) {
    it(`drops Authorization, Cookie and Proxy-Authorization when a redirect goes to ${where}`, async () => {
      await post(`/307/${where === 'another port' ? 'other-port' : 'other-host'}`, credentials);
      const landed = server().seen.at(-1);
      assert.equal(landed?.url, '/landed');
      assert.equal(landed?.method, 'POST');
      assert.equal(landed?.body, 'payload');
      assert.equal(landed?.headers.authorization, undefined);
      assert.equal(landed?.headers.cookie, undefined);
      assert.equal(landed?.headers['proxy-authorization'], undefined);
      assert.equal(landed?.headers['x-trace'], 'kept');
    });
  }

  it('returns a 300 Multiple Choices as it is instead of following it', async () => {
    const res = await client.request({ url: `http://localhost:${a.port}/300/same` }, { policy });
    assert.equal(res.status, 300);
    assert.deepEqual(res.redirects, []);
  });
});
