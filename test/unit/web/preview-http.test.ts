import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { checkPreviewPath } from '../../../src/computer/preview/preview-service.js';
import { isPaddockError } from '../../../src/shared/errors.js';
import {
  clientResponseHeaders,
  guestRequestHeaders,
  PREVIEW_SANDBOX_CSP,
  type ProxyTarget,
  rewriteLocation,
  rewriteSetCookie,
} from '../../../src/web/preview/http.js';

const target: ProxyTarget = {
  path: '/',
  port: 8000,
  basePath: '/preview',
  serverToken: 'tok123',
  sandbox: true,
};

describe('preview relay headers and paths', () => {
  it('accepts guest paths with queries and fragments and refuses URLs, traversal, backslashes and control characters', () => {
    for (const ok of [
      '/',
      '/hello.html?x=1#title',
      '/a..b/c',
      '/q?next=../x',
      '/%E6%97%A5.html',
      '/日本.html',
    ])
      assert.equal(checkPreviewPath(ok), ok);
    for (const bad of [
      'https://example.com/',
      'example.com/x',
      '//evil.example/',
      '/a/../b',
      '/a/..',
      '/a/%2E%2E/b',
      '/a/%2f/b',
      '/a\\b',
      '/a%5Cb',
      '/a\tb',
      '/a\u0000b',
      '/%E0%A4%A',
      '',
      `/${'x'.repeat(4096)}`,
    ]) {
      assert.throws(
        () => checkPreviewPath(bad),
        (e: unknown) => isPaddockError(e) && e.code === 'INVALID_ARGUMENT',
        bad.slice(0, 30),
      );
    }
  });

  it("keeps the dock's cookies and the server token from the guest, and names the guest's own host", () => {
    const headers = guestRequestHeaders(
      {
        host: '127.0.0.1:7331',
        cookie: 'paddock_session=s3cret; theme=dark; PADDOCK_x=1; app=2',
        authorization: 'Bearer tok123',
        connection: 'keep-alive, x-private',
        'x-private': 'hop',
        'keep-alive': 'timeout=5',
        'x-forwarded-for': 'spoofed',
        accept: 'text/html',
      },
      target,
    );
    assert.deepEqual(headers, {
      cookie: 'theme=dark; app=2',
      accept: 'text/html',
      host: 'localhost:8000',
      'x-forwarded-host': '127.0.0.1:7331',
      'x-forwarded-proto': 'http',
      'x-forwarded-prefix': '/preview',
    });
    const app = guestRequestHeaders({ authorization: 'Bearer the-apps-own' }, target);
    assert.equal(app.authorization, 'Bearer the-apps-own', "an app's own credentials pass");
  });

  it('moves redirects and cookies under the base path, drops dock cookies, and sandboxes every response', () => {
    assert.equal(rewriteLocation('/login?next=/', target), '/preview/login?next=/');
    assert.equal(rewriteLocation('http://localhost:8000/a?b#c', target), '/preview/a?b#c');
    assert.equal(rewriteLocation('http://127.0.0.1:9000/a', target), 'http://127.0.0.1:9000/a');
    assert.equal(rewriteLocation('https://example.com/', target), 'https://example.com/');
    assert.equal(rewriteLocation('//example.com/', target), '//example.com/');
    assert.equal(rewriteLocation('next.html', target), 'next.html');
    assert.equal(
      rewriteSetCookie('sid=1; Path=/app; Domain=localhost; HttpOnly', target),
      'sid=1; Path=/preview/app; HttpOnly',
    );
    assert.equal(rewriteSetCookie('paddock_session=forged; Path=/', target), null);
    assert.equal(rewriteSetCookie('sid=1', { ...target, basePath: '' }), 'sid=1');
    const out = clientResponseHeaders(
      [
        'Content-Type',
        'text/html',
        'Connection',
        'keep-alive',
        'Transfer-Encoding',
        'chunked',
        'Set-Cookie',
        'a=1; Path=/',
        'Set-Cookie',
        'paddock_x=1',
        'Location',
        '/next',
      ],
      target,
    );
    for (const away of [
      'https://evil.example/?d=1',
      '//evil.example/',
      'http://127.0.0.1:9000/a',
      '\\\\evil.example/',
    ]) {
      assert.deepEqual(
        clientResponseHeaders(['Location', away], target),
        ['Content-Security-Policy', PREVIEW_SANDBOX_CSP],
        away,
      );
    }
    assert.deepEqual(out, [
      'Content-Type',
      'text/html',
      'Set-Cookie',
      'a=1; Path=/preview/',
      'Location',
      '/preview/next',
      'Content-Security-Policy',
      PREVIEW_SANDBOX_CSP,
    ]);
  });
});
