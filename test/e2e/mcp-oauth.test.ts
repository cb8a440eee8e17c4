/**
 * A real OAuth client flow: the MCP SDK client's OAuth provider discovers Paddock's metadata,
 * registers, sends the person to the dock's consent page, where they approve (or deny) in
 * Debian's Chromium; the client then lists and calls tools. Revoking in the dock's clients
 * page ends the client's access at once.
 */
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { Client, StreamableHTTPClientTransport, UnauthorizedError } from '@modelcontextprotocol/client';
import { type Browser, type BrowserContext, chromium, type Page } from 'playwright-core';
import { CHROMIUM } from '../helpers/clients.js';
import { auditCallerOf } from '../helpers/oauth.js';
import { MemoryProvider } from '../helpers/oauth-provider.js';
import {
  runCli,
  type ServeProcess,
  startServe,
  type TempProject,
  tempProject,
} from '../helpers/paddock-process.js';
import { pollUntil } from '../helpers/poll.js';

describe('OAuth sign-in of the MCP SDK client, approved in the dock (Chromium)', () => {
  let project: TempProject;
  let serve: ServeProcess;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  let callback: Server;
  let callbackUrl: string;
  const answers: URLSearchParams[] = [];

  before(async () => {
    project = tempProject();
    serve = await startServe(project);
    callback = createServer((req, res) => {
      answers.push(new URL(req.url ?? '/', 'http://127.0.0.1').searchParams);
      res.writeHead(200, { 'content-type': 'text/plain' }).end('Signed in; you can close this window.');
    });
    await new Promise<void>((resolve) => callback.listen(0, '127.0.0.1', resolve));
    callbackUrl = `http://127.0.0.1:${(callback.address() as AddressInfo).port}/callback`;
    browser = await chromium.launch(CHROMIUM);
    context = await browser.newContext();
    page = await context.newPage();
    await page.goto(await serve.loginLink());
    await page.waitForURL(`${serve.url}/`);
  });

  after(async () => {
    await browser?.close().catch(() => undefined);
    await new Promise((resolve) => callback?.close(resolve));
    await serve?.stop();
    project?.cleanup();
  });

  /** Runs the client until it needs the person; returns its transport and where it sent them. */
  async function startSignIn(provider: MemoryProvider) {
    const transport = new StreamableHTTPClientTransport(new URL(`${serve.url}/mcp`), {
      authProvider: provider,
    });
    const client = new Client({ name: 'oauth-e2e', version: '1.0.0' });
    await assert.rejects(client.connect(transport), UnauthorizedError);
    assert.ok(provider.authorizationUrl, 'the client was sent to the authorization page');
    return transport;
  }

  /** Opens the consent page in Chromium, presses a button, returns the callback's query. */
  async function answer(url: URL, button: '#approve' | '#deny'): Promise<URLSearchParams> {
    const before = answers.length;
    await page.goto(url.toString());
    await page.locator(button).click();
    const params = await pollUntil(() => answers[before], 'the redirect back to the client');
    assert.ok(params);
    return params;
  }

  it('discovers, registers, is approved in the dock and then lists and calls tools, audited as the client', async () => {
    const provider = new MemoryProvider(callbackUrl, 'E2E Desktop Client');
    const transport = await startSignIn(provider);
    const url = provider.authorizationUrl!;
    assert.equal(`${url.origin}${url.pathname}`, `${serve.url}/oauth/authorize`);
    assert.equal(url.searchParams.get('code_challenge_method'), 'S256');
    await page.goto(url.toString());
    assert.equal(await page.locator('#client-name').textContent(), 'E2E Desktop Client');
    assert.equal(await page.locator('#redirect-uri').textContent(), callbackUrl);
    assert.equal(await page.locator('#verified').textContent(), 'not verified');
    assert.deepEqual((await page.locator('#scopes code').allTextContents()).sort(), [
      'computer',
      'integrations',
      'tools',
    ]);
    const params = await answer(url, '#approve');
    assert.ok(params.get('code'), params.toString());
    await transport.finishAuth(params);

    const client = new Client({ name: 'oauth-e2e', version: '1.0.0' });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(`${serve.url}/mcp`), { authProvider: provider }),
    );
    try {
      const { tools } = await client.listTools();
      assert.ok(tools.some((t) => t.name === 'save_memory'));
      const r = await client.callTool({ name: 'save_memory', arguments: { content: 'oauth-e2e-marker' } });
      assert.notEqual(r.isError, true, JSON.stringify(r));
    } finally {
      await client.close();
    }
    const caller = await auditCallerOf(project, 'save_memory', 'oauth-e2e-marker');
    const list = await runCli(project, ['clients', 'list', '--json']);
    const listed = JSON.parse(list.stdout.trim().split('\n')[0]!) as { id: string; name: string };
    assert.equal(listed.name, 'E2E Desktop Client');
    assert.match(caller, new RegExp(`^mcp:${listed.id}:[0-9a-f-]{36}$`));
  });

  it('tells the client access_denied when the person denies, and grants nothing', async () => {
    const provider = new MemoryProvider(callbackUrl, 'Denied Client');
    const transport = await startSignIn(provider);
    const params = await answer(provider.authorizationUrl!, '#deny');
    assert.equal(params.get('error'), 'access_denied');
    assert.equal(params.get('code'), null);
    await assert.rejects(transport.finishAuth(params), /denied/);
    const list = await runCli(project, ['clients', 'list']);
    assert.doesNotMatch(list.stdout, /Denied Client/);
  });

  it('ends a client the person revokes on the dock’s clients page at once', async () => {
    const provider = new MemoryProvider(callbackUrl, 'Revoked Client');
    const transport = await startSignIn(provider);
    await transport.finishAuth(await answer(provider.authorizationUrl!, '#approve'));
    const client = new Client({ name: 'oauth-e2e', version: '1.0.0' });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(`${serve.url}/mcp`), { authProvider: provider }),
    );
    await client.listTools();
    await page.goto(`${serve.url}/`);
    await page.getByTestId('clients-link').click();
    await page.waitForURL(`${serve.url}/clients`);
    const row = page.locator('tr', { hasText: 'Revoked Client' });
    await row.getByRole('button', { name: 'Revoke' }).click();
    await page.getByRole('status').filter({ hasText: 'its sessions ended' }).waitFor();
    assert.equal(await page.locator('tr', { hasText: 'Revoked Client' }).count(), 0);
    assert.match(serve.stderr(), /mcp\.session_revoked/);
    await assert.rejects(client.listTools());
    await client.close().catch(() => undefined);
  });
});
