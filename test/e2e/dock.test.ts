/**
 * The dock in a real browser: Debian's chromium driven by playwright-core against a real
 * `paddock serve`, with a real MCP client acting as the agent. Needs the page built
 * (`npm run build:ui`); saves a screenshot to test-artifacts/dock.png.
 */
import assert from 'node:assert/strict';
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { type Browser, type BrowserContext, chromium, type Page } from 'playwright-core';
import { WebSocket } from 'ws';
import { SqliteAuditStore } from '../../src/store/sqlite/audit-store.js';
import { openDatabase } from '../../src/store/sqlite/database.js';
import { rows } from '../helpers/audit-rows.js';
import { CHROMIUM } from '../helpers/clients.js';
import {
  REPO_ROOT,
  type ServeProcess,
  startServe,
  type TempProject,
  tempProject,
} from '../helpers/paddock-process.js';

const ARTIFACTS = join(REPO_ROOT, 'test-artifacts');
const UI_INDEX = join(REPO_ROOT, 'dist', 'ui', 'index.html');

/** Status of a websocket upgrade to the dock with these headers (101 when accepted). */
function upgradeStatus(url: string, headers: Record<string, string>): Promise<number> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(`${url.replace('http://', 'ws://')}/dock/ws`, { headers });
    ws.once('unexpected-response', (_req, res) => {
      resolve(res.statusCode ?? 0);
      res.resume();
    });
    ws.once('open', () => {
      ws.terminate();
      resolve(101);
    });
    ws.once('error', reject);
  });
}

describe('the dock in a browser', () => {
  let project: TempProject;
  let serve: ServeProcess;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  let agent: Client;
  const pageErrors: string[] = [];

  before(async () => {
    assert.ok(
      existsSync(UI_INDEX),
      `The dock page is not built (${UI_INDEX}); run \`npm run build:ui\` first.`,
    );
    project = tempProject();
    serve = await startServe(project);
    browser = await chromium.launch(CHROMIUM);
    context = await browser.newContext({ viewport: { width: 1440, height: 900 } });
    page = await context.newPage();
    page.on('pageerror', (e) => pageErrors.push(e.message));
    agent = new Client({ name: 'dock-e2e-agent', version: '1.0.0' });
    await agent.connect(
      new StreamableHTTPClientTransport(new URL(`${serve.url}/mcp`), {
        requestInit: { headers: { authorization: `Bearer ${serve.token}` } },
      }),
    );
  });

  after(async () => {
    await agent?.close().catch(() => undefined);
    await browser?.close().catch(() => undefined);
    await serve?.stop();
    project?.cleanup();
  });

  it('signs in with the login link printed at start and renders the computer status', async () => {
    const link = await serve.loginLink();
    assert.match(link, /\/login\?code=/);
    assert.ok(!link.includes(serve.token), 'the link is not the server token');
    await page.goto(link);
    await page.waitForURL(`${serve.url}/`);
    await page.getByTestId('connection').filter({ hasText: 'Live' }).waitFor();
    // the status renders once the first snapshot arrives, which may follow the live socket
    await page
      .getByTestId('lifecycle')
      .filter({ hasText: /^(No computer|Booting|Running|Error|Stopped|Unavailable)$/ })
      .waitFor();
    const cookie = (await context.cookies()).find((c) => c.name === 'paddock_session');
    assert.ok(cookie, 'the session cookie is set');
    assert.equal(cookie.httpOnly, true);
    assert.equal(cookie.sameSite, 'Strict');
    assert.notEqual(cookie.value, serve.token);
  });

  it('shows the agent\u2019s tool call in the audit stream as it happens, without a reload', async () => {
    await page.evaluate(() => {
      (globalThis as unknown as { dockMarker: number }).dockMarker = 42;
    });
    const result = await agent.callTool({
      name: 'save_memory',
      arguments: { content: 'from the e2e agent' },
    });
    assert.notEqual(result.isError, true, JSON.stringify(result));
    const row = page.locator('[data-testid=audit-list] .audit-row[data-tool=save_memory]').first();
    await row.waitFor();
    assert.match((await row.textContent()) ?? '', /save_memory.*dock-e2e-agent 1\.0\.0 #\w{4}.*ok/s);
    await row.locator('.row-head').click();
    await row.locator('.row-details pre').getByText('from the e2e agent').waitFor();
    assert.equal(
      await page.evaluate(() => (globalThis as unknown as { dockMarker?: number }).dockMarker),
      42,
    );
  });

  it('refuses a websocket from another origin and one without the session', async () => {
    const cookie = (await context.cookies()).find((c) => c.name === 'paddock_session');
    assert.ok(cookie);
    const session = `paddock_session=${cookie.value}`;
    assert.equal(await upgradeStatus(serve.url, { cookie: session, origin: serve.url }), 101);
    assert.equal(await upgradeStatus(serve.url, { cookie: session, origin: 'http://evil.example' }), 403);
    assert.equal(await upgradeStatus(serve.url, { origin: serve.url }), 401);
    const fromOtherOrigin = await page.evaluate(async (port) => {
      return await new Promise<string>((resolve) => {
        const ws = new WebSocket(`ws://localhost:${port}/dock/ws`);
        ws.onopen = () => resolve('open');
        ws.onerror = () => resolve('refused');
      });
    }, new URL(serve.url).port);
    assert.equal(fromOtherOrigin, 'refused');
  });

  it('shows a launch link\u2019s script and boots nothing until the person confirms', async () => {
    const marker = `started-from-link-${Date.now()}`;
    const script = `echo ${marker}\necho "<b>not markup</b>"\n${'# filler line\n'.repeat(400)}echo script-end`;
    const created = await agent.callTool({
      name: 'create_launch_link',
      arguments: { profileId: 'shell', startupScript: script },
    });
    assert.notEqual(created.isError, true, JSON.stringify(created.content));
    const linkUrl = String((created.structuredContent as { url: string }).url);
    const status = async () =>
      (await agent.callTool({ name: 'get_computer_status', arguments: {} })).structuredContent as {
        generation: number | null;
        lifecycle: string;
      };
    const before = await status();
    const launchPage = await context.newPage();
    await launchPage.goto(`${serve.url}${new URL(linkUrl).pathname}`);
    const shown = await launchPage.locator('#script').textContent();
    assert.equal(shown, script, 'the page shows the whole script as text');
    assert.deepEqual(await status(), before, 'opening the page boots nothing');
    await launchPage.locator('#confirm').click();
    await launchPage.waitForURL(`${serve.url}/`, { timeout: 10_000 }).catch(async (e: Error) => {
      throw new Error(
        `${e.message}\nthe page shows: ${(await launchPage.locator('body').textContent())?.slice(0, 500)}`,
      );
    });
    await launchPage.getByTestId('notice').filter({ hasText: 'is running' }).waitFor({ timeout: 20_000 });
    await launchPage.getByTestId('lifecycle').filter({ hasText: 'Running' }).waitFor();
    await launchPage.locator('.job-row pre.stdout').filter({ hasText: marker }).waitFor({ timeout: 20_000 });
    await launchPage.close();
    await page.getByTestId('lifecycle').filter({ hasText: 'Running' }).waitFor();
    await page.locator('[data-tab=jobs]').click();
    await page.locator('.job-row.exited').filter({ hasText: marker }).waitFor({ timeout: 10_000 });
    await page.locator('[data-tab=audit]').click();
    // the confirmation went through the gateway: the launch and the whole script have their rows
    const all = rows(project.dataDir);
    const launched = all.filter((r) => r.tool === 'launch_computer' && r.caller === 'dock:owner');
    assert.ok(
      launched.some((r) => r.input.includes('"profileId":"shell"')),
      'the launch has its row',
    );
    const ran = all.find(
      (r) => r.tool === 'run_command' && r.caller === 'dock:owner' && r.input.includes(marker),
    );
    assert.ok(ran, 'the startup script has its run_command row');
    assert.ok(ran.inputSha256, 'a script this long is kept whole beside its preview');
    const db = openDatabase(join(project.dataDir, 'paddock.db'));
    try {
      const whole = (await new SqliteAuditStore(db).fullInput(ran.inputSha256)) ?? '';
      assert.ok(whole.includes('script-end'), 'the whole script is kept');
    } finally {
      db.close();
    }
  });

  it('launches from the dock through the gateway, audited as the person at the dock', async () => {
    const generation = await page.locator('.status-details .chip').textContent();
    await page.getByTestId('profile-select').selectOption('shell');
    await page.getByTestId('launch').click();
    // the relaunch says what is lost before anything happens
    await page.getByTestId('relaunch-confirm').filter({ hasText: '/workspace is deleted' }).waitFor();
    await page.getByTestId('relaunch-delete').click();
    const row = page.locator('[data-testid=audit-list] .audit-row[data-tool=launch_computer]').first();
    await row.waitFor({ timeout: 10_000 });
    assert.match((await row.textContent()) ?? '', /you \(dock, owner\).*ok/s);
    assert.equal(await row.locator('.caller').getAttribute('title'), 'dock:owner');
    await page
      .locator('.status-details .chip')
      .filter({ hasNotText: generation ?? '' })
      .waitFor({ timeout: 15_000 });
    await page.getByTestId('lifecycle').filter({ hasText: 'Running' }).waitFor({ timeout: 15_000 });
  });

  it('renders without page errors and saves a screenshot of the dock', async () => {
    await agent.callTool({ name: 'recall_memory', arguments: { query: 'e2e agent' } });
    await page.locator('[data-testid=audit-list] .audit-row[data-tool=recall_memory]').first().waitFor();
    mkdirSync(ARTIFACTS, { recursive: true });
    await page.screenshot({ path: join(ARTIFACTS, 'dock.png') });
    assert.deepEqual(pageErrors, []);
  });
});
