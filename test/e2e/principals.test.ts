/**
 * The person decides what a client may use, in Chromium: the consent page lists the named
 * computers a client asks for and grants only those left ticked; the dock's Clients page opens
 * and closes a named computer later, and its Revoke ends the client's running job at once. The
 * client is the MCP SDK client with its OAuth provider; the server is a real `paddock serve`.
 */
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Client, StreamableHTTPClientTransport, UnauthorizedError } from '@modelcontextprotocol/client';
import { type Browser, chromium, type Page } from 'playwright-core';
import { CHROMIUM, connectHttp } from '../helpers/clients.js';
import { MemoryProvider } from '../helpers/oauth-provider.js';
import {
  REPO_ROOT,
  type ServeProcess,
  startServe,
  type TempProject,
  tempProject,
} from '../helpers/paddock-process.js';
import { pollUntil } from '../helpers/poll.js';

const ARTIFACTS = join(REPO_ROOT, 'test-artifacts');
type Structured = Record<string, unknown>;

async function call(client: Client, name: string, args: Structured): Promise<Structured> {
  const r = await client.callTool({ name, arguments: args });
  const text = (r.content as { text?: string }[] | undefined)?.[0]?.text;
  const body = (r.structuredContent ?? (text ? JSON.parse(text) : {})) as Structured;
  return r.isError ? { error: body } : body;
}

describe('what a client may use, decided by the person in the dock (Chromium)', () => {
  let project: TempProject;
  let serve: ServeProcess;
  let browser: Browser;
  let page: Page;
  let callback: Server;
  let callbackUrl: string;
  const answers: URLSearchParams[] = [];
  const open: Client[] = [];

  before(async () => {
    mkdirSync(ARTIFACTS, { recursive: true });
    project = tempProject('computer:\n  defaultProfile: shell\n');
    serve = await startServe(project);
    callback = createServer((req, res) => {
      answers.push(new URL(req.url ?? '/', 'http://127.0.0.1').searchParams);
      res.writeHead(200, { 'content-type': 'text/plain' }).end('Signed in.');
    });
    await new Promise<void>((resolve) => callback.listen(0, '127.0.0.1', resolve));
    callbackUrl = `http://127.0.0.1:${(callback.address() as AddressInfo).port}/callback`;
    browser = await chromium.launch(CHROMIUM);
    page = await (await browser.newContext({ viewport: { width: 1280, height: 800 } })).newPage();
    await page.goto(await serve.loginLink());
    await page.waitForURL(`${serve.url}/`);
  });
  after(async () => {
    for (const c of open) await c.close().catch(() => undefined);
    await browser?.close().catch(() => undefined);
    await new Promise((resolve) => callback?.close(resolve));
    await serve?.stop();
    project?.cleanup();
  });

  async function session(provider: MemoryProvider, computer?: string): Promise<Client> {
    const client = new Client({ name: 'principals-e2e', version: '1.0.0' });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(`${serve.url}/mcp`), {
        authProvider: provider,
        ...(computer ? { requestInit: { headers: { 'paddock-computer': computer } } } : {}),
      }),
    );
    open.push(client);
    return client;
  }

  it('grants only the computers left ticked, opens and closes one on the Clients page, and Revoke ends its job', async () => {
    for (const name of ['review-box', 'prod']) {
      const owner = await connectHttp(serve.url, serve.token, 'owner', { computer: name });
      open.push(owner);
      await call(owner, 'launch_computer', { profileId: 'shell' });
      await call(owner, 'write_file', {
        path: '/workspace/where.txt',
        content: `this is ${name}`,
        overwrite: true,
      });
    }
    const provider = new MemoryProvider(callbackUrl, 'Reviewer Bot');
    const first = new Client({ name: 'principals-e2e', version: '1.0.0' });
    const transport = new StreamableHTTPClientTransport(new URL(`${serve.url}/mcp`), {
      authProvider: provider,
    });
    await assert.rejects(first.connect(transport), UnauthorizedError);
    const url = provider.authorizationUrl!;
    url.searchParams.set('scope', 'tools computer computer:review-box computer:prod');
    await page.goto(url.toString());
    assert.deepEqual(
      await page
        .locator('#computers input[name="computer"]')
        .evaluateAll((els) => els.map((e) => e.getAttribute('value'))),
      ['review-box', 'prod'],
    );
    await page.locator('#computers input[value="prod"]').uncheck();
    await page.screenshot({ path: join(ARTIFACTS, 'principals-consent.png') });
    const before = answers.length;
    await page.locator('#approve').click();
    await transport.finishAuth((await pollUntil(() => answers[before], 'the redirect back'))!);

    const onReview = await session(provider, 'review-box');
    const onProd = await session(provider, 'prod');
    assert.match(
      JSON.stringify(await call(onReview, 'read_file', { path: '/workspace/where.txt' })),
      /this is review-box/,
    );
    assert.equal(
      ((await call(onProd, 'read_file', { path: '/workspace/where.txt' })).error as Structured)?.code,
      'NOT_FOUND',
    );

    // later, on the dock's Clients page: open prod, close review-box
    await page.goto(`${serve.url}/clients`);
    const row = page.locator('tr', { hasText: 'Reviewer Bot' });
    await row.getByLabel('Named computer to grant').fill('prod');
    await row.getByRole('button', { name: 'Grant' }).click();
    await page.getByRole('status').filter({ hasText: 'may now use your computer prod' }).waitFor();
    await page
      .locator('tr', { hasText: 'Reviewer Bot' })
      .locator('li[data-computer="review-box"]')
      .getByRole('button', { name: 'Withdraw' })
      .click();
    await page
      .getByRole('status')
      .filter({ hasText: 'may no longer use your computer review-box' })
      .waitFor();
    await page.screenshot({ path: join(ARTIFACTS, 'principals-clients.png') });
    assert.match(
      JSON.stringify(await call(onProd, 'read_file', { path: '/workspace/where.txt' })),
      /this is prod/,
    );
    assert.equal(
      ((await call(onReview, 'read_file', { path: '/workspace/where.txt' })).error as Structured)?.code,
      'NOT_FOUND',
    );

    // a job of the client on prod keeps calling tools until Revoke ends it
    const job = await call(onProd, 'run_command', {
      script: 'while true; do paddock-tool call recall_memory \'{"query":"x"}\' >/dev/null; sleep 0.1; done',
      waitMs: 0,
      timeoutMs: 300_000,
    });
    await page.goto(`${serve.url}/clients`);
    await page.locator('tr', { hasText: 'Reviewer Bot' }).getByRole('button', { name: 'Revoke' }).click();
    await page
      .getByRole('status')
      .filter({ hasText: 'its running jobs and its computers with them' })
      .waitFor();
    const owner = await connectHttp(serve.url, serve.token, 'owner-check', { computer: 'prod' });
    open.push(owner);
    const seen = await call(owner, 'read_job', { jobId: job.jobId });
    assert.equal(seen.canceled, true, JSON.stringify(seen));
    await assert.rejects(call(onProd, 'get_computer_status', {}));
  });
});
