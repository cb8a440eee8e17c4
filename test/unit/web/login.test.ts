import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { DockLogin } from '../../../src/web/dock/login.js';
import { type DockServer, openSocket, startDockServer } from './harness.js';

describe('dock sign-in', () => {
  let server: DockServer;

  before(async () => {
    server = await startDockServer();
  });

  after(async () => {
    await server?.close();
  });

  it('a login link sets an HttpOnly, SameSite=Strict session cookie and sends the browser to the dock', async () => {
    const link = server.dock.loginLink(server.base);
    assert.match(link, new RegExp(`^${server.base}/login\\?code=[A-Za-z0-9_-]{32}$`));
    const res = await fetch(link, { redirect: 'manual' });
    assert.equal(res.status, 200);
    const cookie = res.headers.get('set-cookie') ?? '';
    assert.match(cookie, /^paddock_session=[A-Za-z0-9_-]{43}; /);
    assert.match(cookie, /; HttpOnly/);
    assert.match(cookie, /; SameSite=Strict/);
    assert.match(cookie, /; Path=\//);
    const html = await res.text();
    assert.match(html, /<meta http-equiv="refresh" content="0;url=\/">/);
    assert.equal(
      res.headers.get('referrer-policy'),
      'same-origin',
      'the code never reaches another site in a Referer',
    );
  });

  it('keeps the server token out of the cookie and the link', async () => {
    const link = server.dock.loginLink(server.base);
    assert.ok(!link.includes(server.token));
    const res = await fetch(link, { redirect: 'manual' });
    assert.ok(!(res.headers.get('set-cookie') ?? '').includes(server.token));
  });

  it('accepts a login code only once', async () => {
    const link = server.dock.loginLink(server.base);
    assert.equal((await fetch(link, { redirect: 'manual' })).status, 200);
    const again = await fetch(link, { redirect: 'manual', headers: { accept: 'text/html' } });
    assert.equal(again.status, 401);
    assert.equal(again.headers.get('set-cookie'), null);
    assert.match(await again.text(), /invalid, expired or was already used/);
  });

  it('opens the dock with the session cookie and answers others with a sign-in page naming the login link', async () => {
    const cookie = await server.login();
    const signedIn = await fetch(`${server.base}/`, { headers: { cookie } });
    assert.equal(signedIn.status, 503, 'no page built in this test: the dock answers, not the sign-in');
    const anonymous = await fetch(`${server.base}/`, { headers: { accept: 'text/html' } });
    assert.equal(anonymous.status, 401);
    const html = await anonymous.text();
    assert.match(html, /login link/);
    assert.match(html, /\/login\?code=/);
    const forged = await fetch(`${server.base}/`, { headers: { cookie: 'paddock_session=not-a-session' } });
    assert.equal(forged.status, 401);
  });

  it('does not let a dock session call /mcp (MCP clients must send the bearer token)', async () => {
    const cookie = await server.login();
    const res = await fetch(`${server.base}/mcp`, {
      method: 'POST',
      headers: { cookie, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'initialize',
        params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } },
      }),
    });
    assert.equal(res.status, 401);
  });

  it('lets a script with the bearer token open the dock and ask for a fresh login link', async () => {
    const authorization = `Bearer ${server.token}`;
    assert.equal((await fetch(`${server.base}/`, { headers: { authorization } })).status, 503);
    const res = await fetch(`${server.base}/login/link`, { method: 'POST', headers: { authorization } });
    assert.equal(res.status, 200);
    const body = (await res.json()) as { url: string; expiresAt: string };
    assert.match(body.url, /\/login\?code=/);
    assert.equal((await fetch(body.url, { redirect: 'manual' })).status, 200);
    const anonymous = await fetch(`${server.base}/login/link`, { method: 'POST' });
    assert.equal(anonymous.status, 401);
  });
});

describe('dock without auth (auth: none)', () => {
  let server: DockServer;

  before(async () => {
    server = await startDockServer({ auth: 'none' });
  });

  after(async () => {
    await server?.close();
  });

  it('needs no sign-in but still refuses websockets from other origins', async () => {
    assert.equal(server.dock.loginLink(server.base), `${server.base}/`);
    const login = await fetch(`${server.base}/login?code=anything`, { redirect: 'manual' });
    assert.equal(login.status, 303);
    assert.equal(login.headers.get('set-cookie'), null);
    assert.equal((await fetch(`${server.base}/`)).status, 503);
    const s = await openSocket(server, { origin: server.base });
    await s.next('snapshot');
    await s.close();
    await assert.rejects(openSocket(server, { origin: 'http://evil.example' }), { status: 403 } as object);
  });
});

describe('DockLogin', () => {
  it('refuses a code after it expired', () => {
    let now = 1_000_000;
    const login = new DockLogin({ codeTtlMs: 600_000, now: () => now });
    const { code, expiresAt } = login.issueCode();
    assert.equal(expiresAt, 1_600_000);
    now += 600_001;
    assert.equal(login.redeem(code), null);
  });

  it('ends sessions past their maximum age and on revokeAll', () => {
    let now = 0;
    const login = new DockLogin({ sessionMaxAgeMs: 1000, now: () => now });
    const a = login.redeem(login.issueCode().code)!;
    const b = login.redeem(login.issueCode().code)!;
    assert.ok(login.valid(a) && login.valid(b));
    now = 1001;
    assert.equal(login.valid(a), false);
    const c = login.redeem(login.issueCode().code)!;
    login.revokeAll();
    assert.equal(login.valid(c), false);
  });

  it('keeps a bounded number of sessions, dropping the least recently used', () => {
    const login = new DockLogin({ maxSessions: 2 });
    const a = login.redeem(login.issueCode().code)!;
    const b = login.redeem(login.issueCode().code)!;
    assert.ok(login.valid(a));
    const c = login.redeem(login.issueCode().code)!;
    assert.equal(login.valid(b), false);
    assert.ok(login.valid(a) && login.valid(c));
  });
});
