import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { type DockServer, startDockServer } from './harness.js';

describe('the built page', () => {
  let ui: string;
  let server: DockServer;
  let missing: DockServer;
  let cookie: string;

  before(async () => {
    ui = mkdtempSync(join(tmpdir(), 'paddock-ui-'));
    mkdirSync(join(ui, 'assets'));
    writeFileSync(
      join(ui, 'index.html'),
      '<!doctype html><title>dock</title><script type="module" src="/assets/index-abc.js"></script>',
    );
    writeFileSync(join(ui, 'assets', 'index-abc.js'), 'console.log("dock")');
    writeFileSync(join(ui, 'assets', 'index-abc.css'), 'body{}');
    writeFileSync(join(ui, 'favicon.svg'), '<svg xmlns="http://www.w3.org/2000/svg"/>');
    writeFileSync(join(ui, 'secret.txt'), 'not an asset');
    server = await startDockServer({ uiDir: ui });
    missing = await startDockServer();
    cookie = await server.login();
  });

  after(async () => {
    await server?.close();
    await missing?.close();
    rmSync(ui, { recursive: true, force: true });
  });

  it('serves the page with a strict Content-Security-Policy', async () => {
    const res = await fetch(`${server.base}/`, { headers: { cookie } });
    assert.equal(res.status, 200);
    assert.match(await res.text(), /<title>dock<\/title>/);
    const csp = res.headers.get('content-security-policy') ?? '';
    // scripts only from the server; WebAssembly compiled by them (the browser computer's emulator)
    assert.match(csp, /script-src 'self' 'wasm-unsafe-eval'(;|$)/);
    assert.match(csp, /worker-src 'self' blob:(;|$)/);
    assert.match(csp, /connect-src 'self'/);
    assert.match(csp, /frame-ancestors 'none'/);
    assert.equal(res.headers.get('x-frame-options'), 'DENY');
  });

  it('serves assets with their types and nothing else from the directory', async () => {
    const js = await fetch(`${server.base}/assets/index-abc.js`, { headers: { cookie } });
    assert.equal(js.status, 200);
    assert.equal(js.headers.get('content-type'), 'text/javascript; charset=utf-8');
    assert.match(js.headers.get('cache-control') ?? '', /immutable/);
    const css = await fetch(`${server.base}/assets/index-abc.css`, { headers: { cookie } });
    assert.equal(css.headers.get('content-type'), 'text/css; charset=utf-8');
    assert.equal((await fetch(`${server.base}/favicon.svg`, { headers: { cookie } })).status, 200);
    for (const path of [
      '/secret.txt',
      '/assets/../secret.txt',
      '/assets/..%2Fsecret.txt',
      '/assets/%2e%2e/secret.txt',
      '/assets/nope.js',
    ]) {
      const res = await fetch(`${server.base}${path}`, { headers: { cookie } });
      assert.equal(res.status, 404, path);
    }
  });

  it('needs a session for the page and its assets', async () => {
    assert.equal((await fetch(`${server.base}/`)).status, 401);
    assert.equal((await fetch(`${server.base}/assets/index-abc.js`)).status, 401);
  });

  it('says to run npm run build when the page was not built', async () => {
    const c = await missing.login();
    const res = await fetch(`${missing.base}/`, { headers: { cookie: c } });
    assert.equal(res.status, 503);
    assert.match(await res.text(), /npm run build/);
  });
});
