import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { BwrapBackend } from '../../../src/computer/backend/bwrap/backend.js';
import type { ComputerManager } from '../../../src/computer/manager.js';
import { ComputerService } from '../../../src/computer/service.js';
import { computerSchema } from '../../../src/config/computer-schema.js';
import { silentLogger } from '../../../src/shared/logger.js';
import { openDatabase } from '../../../src/store/sqlite/database.js';
import { SqliteLaunchLinkStore } from '../../../src/store/sqlite/launch-link-store.js';
import { dockComputerFromService } from '../../../src/web/dock/index.js';
import { renderScript } from '../../../src/web/dock/launch-page.js';
import { type DockServer, openSocket, startDockServer } from './harness.js';

const MARKER = 'launch-link-ran';
/** A script with markup, quotes and 3000 lines: the page must show every byte of it, escaped. */
const SCRIPT = [
  `echo ${MARKER} > /tmp/marker`,
  `echo "<script>alert('x')</script> & done"`,
  ...Array.from({ length: 3000 }, (_, i) => `# line ${i + 1}`),
  'echo last-line',
].join('\n');

async function poll<T>(what: string, fn: () => T | undefined | false | null, timeoutMs = 15_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = fn();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

function nonceOf(html: string): string {
  const m = /name="nonce" value="([^"]+)"/.exec(html);
  if (!m?.[1]) throw new Error('no nonce in the page');
  return m[1];
}

describe('launch-link page', () => {
  let dir: string;
  let service: ComputerService;
  let manager: ComputerManager;
  let managerDb: ReturnType<typeof openDatabase>;
  let server: DockServer;
  let cookie: string;

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'paddock-dock-launch-'));
    const logger = silentLogger();
    managerDb = openDatabase(join(dir, 'paddock.db'));
    service = new ComputerService({
      backend: new BwrapBackend({ logger }),
      config: computerSchema.parse({ autoLaunch: false }),
      dataDir: dir,
      dockUrl: 'http://127.0.0.1',
      logger,
      launchLinks: new SqliteLaunchLinkStore(managerDb),
    });
    manager = service.byKey('private:dock');
    server = await startDockServer({ dir, computer: dockComputerFromService(service, { logger }) });
    cookie = await server.login();
  });

  after(async () => {
    await server?.close();
    await service?.close();
    managerDb?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const page = (id: string, init: RequestInit = {}) =>
    fetch(`${server.base}/launch/${id}`, {
      redirect: 'manual',
      ...init,
      headers: { cookie, ...init.headers },
    });

  const confirm = (id: string, nonce: string, headers: Record<string, string> = { origin: server.base }) =>
    page(id, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
      body: new URLSearchParams({ nonce }).toString(),
    });

  it('shows the profile and the full startup script, escaped, and boots nothing', async () => {
    const link = await manager.createLaunchLink('shell', SCRIPT);
    const res = await page(link.id);
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-security-policy') ?? '', /frame-ancestors 'none'/);
    const html = await res.text();
    assert.match(html, /Shell <code>shell<\/code>/);
    assert.ok(html.includes('echo &quot;&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; done&quot;'));
    assert.ok(!html.includes("<script>alert('x')"));
    assert.ok(
      html.includes('# line 1\n') && html.includes('# line 3000\n') && html.includes('echo last-line'),
    );
    assert.match(html, /3003 lines/);
    assert.equal(manager.status().lifecycle, 'none');
  });

  it('refuses a confirmation from another origin, without an Origin, or without the page nonce', async () => {
    const link = await manager.createLaunchLink('shell', SCRIPT);
    const nonce = nonceOf(await (await page(link.id)).text());
    assert.equal((await confirm(link.id, nonce, { origin: 'http://evil.example' })).status, 403);
    assert.equal((await confirm(link.id, nonce, {})).status, 403);
    assert.equal(
      (await confirm(link.id, nonce, { origin: server.base, 'sec-fetch-site': 'cross-site' })).status,
      403,
    );
    assert.equal((await confirm(link.id, 'made-up-nonce')).status, 403);
    const other = await manager.createLaunchLink('shell', 'true');
    assert.equal(
      (await confirm(other.id, nonce)).status,
      403,
      "another link's nonce does not confirm this one",
    );
    assert.equal(manager.status().lifecycle, 'none');
  });

  it('boots the computer and runs the startup script after the person confirms, then sends them to the dock', async () => {
    const link = await manager.createLaunchLink('shell', SCRIPT);
    const socket = await openSocket(server, { cookie, origin: server.base });
    try {
      await socket.next('snapshot');
      const nonce = nonceOf(await (await page(link.id)).text());
      const res = await confirm(link.id, nonce);
      assert.equal(res.status, 303);
      assert.equal(res.headers.get('location'), `/?launch=${link.id}`);
      const running = await socket.next('launch.progress', (m) => m.launch.state === 'running', 15_000);
      assert.equal(running.launch.linkId, link.id);
      const jobId = running.launch.jobId;
      assert.ok(jobId);
      const job = await socket.next('job', (m) => m.job.jobId === jobId && m.job.state !== 'running', 15_000);
      assert.equal(job.job.state, 'exited');
      assert.match(job.job.stdoutTail, /<script>alert\('x'\)<\/script> & done\nlast-line\n$/);
      await socket.next('status', (m) => m.status.lifecycle === 'running');
      assert.ok(socket.messages.some((m) => m.type === 'log' && m.entry.event === 'computer.boot'));
      assert.deepEqual(socket.invalid, []);
      const again = await confirm(link.id, nonce);
      assert.equal(again.status, 403, 'a nonce confirms once');
      await poll('the job in the snapshot', () =>
        server.dock.hub.snapshot(false).jobs.some((j) => j.jobId === jobId),
      );
    } finally {
      await socket.close();
    }
  });

  it('answers an unknown or malformed link with a clear page', async () => {
    const unknown = await page('AAAAAAAAAAAAAAAA');
    assert.equal(unknown.status, 404);
    assert.match(await unknown.text(), /No launch link/);
    const malformed = await page('bad!id');
    assert.equal(malformed.status, 404);
  });
});

describe('renderScript', () => {
  it('shows control and bidirectional-override characters instead of hiding them', () => {
    const out = renderScript('echo ok\u202e\u0007 <b>\r\n\tx');
    assert.equal(
      out,
      'echo ok<span class="ctl">&lt;U+202E&gt;</span><span class="ctl">&lt;U+0007&gt;</span> &lt;b&gt;<span class="ctl">&lt;U+000D&gt;</span>\n\tx',
    );
  });
});
