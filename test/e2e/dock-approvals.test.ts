/**
 * The dock's approvals panel in a real browser: a real `paddock serve`, the official MCP client
 * over Streamable HTTP waiting on an `ask` tool, an agent run (scripted model) waiting for the
 * same, and Debian's chromium driven by playwright-core. Saves test-artifacts/dock-approvals.png.
 */
import assert from 'node:assert/strict';
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Client } from '@modelcontextprotocol/client';
import { type Browser, chromium, type Page } from 'playwright-core';
import { agentMd, TEST_KEY, writeProjectFiles } from '../fixtures/providers/agents-project.js';
import { type ScriptedProvider, startScriptedProvider } from '../fixtures/providers/scripted-provider.js';
import { CHROMIUM, connectHttp } from '../helpers/clients.js';
import {
  REPO_ROOT,
  runCli,
  type ServeProcess,
  startServe,
  type TempProject,
  tempProject,
} from '../helpers/paddock-process.js';

const ARTIFACTS = join(REPO_ROOT, 'test-artifacts');
const UI_INDEX = join(REPO_ROOT, 'dist', 'ui', 'index.html');

const POSTER = agentMd(
  `
name: poster
description: Saves the release note, after a person approves.
provider: openai
model: gpt-test
tools: [save_memory]
approvals: { wait: 10m }
`,
  'Save the release note, then answer with one line.',
);

interface AuditJson {
  success: boolean;
  approvalId: string | null;
  approver: string | null;
  input: string;
}

describe('the approvals panel of the dock', () => {
  let provider: ScriptedProvider;
  let project: TempProject;
  let serve: ServeProcess;
  let browser: Browser;
  let page: Page;
  let client: Client;
  const pageErrors: string[] = [];

  const auditRow = async (marker: string): Promise<AuditJson> => {
    const { stdout } = await runCli(project, ['audit', '--tool', 'save_memory', '--json']);
    const row = stdout
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as AuditJson)
      .find((r) => r.input.includes(marker));
    assert.ok(row, `an audit row for ${marker}`);
    return row;
  };

  before(async () => {
    assert.ok(
      existsSync(UI_INDEX),
      `The dock page is not built (${UI_INDEX}); run \`npm run build:ui\` first.`,
    );
    provider = await startScriptedProvider({ apiKey: TEST_KEY });
    project = tempProject();
    writeProjectFiles(project.dir, {
      paddockYaml: () => 'permissions:\n  save_memory: ask\n',
      agents: { poster: POSTER },
    });
    project.env.OPENAI_BASE_URL = provider.openaiBaseUrl;
    project.env.OPENAI_API_KEY = TEST_KEY;
    serve = await startServe(project);
    browser = await chromium.launch(CHROMIUM);
    page = await (await browser.newContext({ viewport: { width: 1440, height: 900 } })).newPage();
    page.on('pageerror', (e) => pageErrors.push(e.message));
    await page.goto(await serve.loginLink());
    await page.waitForURL(`${serve.url}/`);
    await page.getByTestId('connection').filter({ hasText: 'Live' }).waitFor();
    client = await connectHttp(serve.url, serve.token);
  });

  after(async () => {
    await client?.close().catch(() => undefined);
    await browser?.close().catch(() => undefined);
    await serve?.stop();
    project?.cleanup();
    await provider?.close();
  });

  it('an SDK client waits while the dock is open; the person reads the full arguments and approves it once', async () => {
    const long = `${'release notes line. '.repeat(40)}END-OF-NOTE`;
    const call = client.callTool({
      name: 'save_memory',
      arguments: { content: long, tags: ['sdk-approve'] },
    });
    const badge = page.getByTestId('approvals-badge');
    await badge.filter({ hasText: '1 waiting' }).waitFor();
    const card = page.getByTestId('approval').filter({ hasText: 'save_memory' });
    await card.waitFor();
    assert.match((await card.textContent()) ?? '', /asked by paddock-test 1\.0\.0 #\w{4}/);
    assert.match((await card.textContent()) ?? '', /[Ss]ave/, 'the tool description is shown');
    const folded = card.locator('details.arg.folded');
    assert.match((await folded.locator('summary').textContent()) ?? '', /content.*\(811 characters\)/);
    await folded.locator('summary').click();
    const full = (await folded.getByTestId('arg-value').textContent()) ?? '';
    assert.equal(full, long, 'the folded value opens to the whole text');
    assert.match((await card.getByTestId('approval-args').textContent()) ?? '', /sdk-approve/);
    mkdirSync(ARTIFACTS, { recursive: true });
    await page.screenshot({ path: join(ARTIFACTS, 'dock-approvals.png') });
    await card.getByTestId('approve-once').click();
    const result = (await call) as { isError?: boolean };
    assert.notEqual(result.isError, true, JSON.stringify(result));
    await badge.waitFor({ state: 'hidden' });
    const row = await auditRow('sdk-approve');
    assert.equal(row.success, true);
    assert.match(row.approvalId ?? '', /^apr_/);
    assert.equal(row.approver, 'dock:owner');
  });

  it('a denial with a reason reaches the SDK client as PERMISSION_REQUIRED with that reason', async () => {
    const call = client.callTool({ name: 'save_memory', arguments: { content: 'deny-from-dock' } });
    const card = page.getByTestId('approval').filter({ hasText: 'deny-from-dock' });
    await card.waitFor();
    await card.getByTestId('approval-reason').fill('not in this project');
    await card.getByTestId('deny').click();
    const result = (await call) as { isError?: boolean; content: { text: string }[] };
    assert.equal(result.isError, true);
    const body = JSON.parse(result.content[0]!.text) as { code: string; message: string };
    assert.equal(body.code, 'PERMISSION_REQUIRED');
    assert.match(body.message, /not in this project/);
    const row = await auditRow('deny-from-dock');
    assert.equal(row.success, false);
    assert.equal(row.approver, 'dock:owner');
  });

  it('an agent run shows "waiting for approval", is approved in the dock, and continues', async () => {
    provider.script([
      { toolCalls: [{ name: 'save_memory', arguments: { content: 'release 1.2 is out' } }] },
      { text: 'Saved the release note.' },
    ]);
    await page.locator('[data-tab=agents]').click();
    const agentCard = page.locator('.agent-card[data-agent=poster]');
    await agentCard.getByTestId('agent-run-now').click();
    await page.getByTestId('run-status').filter({ hasText: 'waiting for approval' }).first().waitFor();
    const card = page.getByTestId('approval').filter({ hasText: 'release 1.2 is out' });
    await card.waitFor();
    assert.match((await card.textContent()) ?? '', /agent poster/);
    await card.getByTestId('approve-once').click();
    const run = page.locator('.run-row.succeeded').filter({ hasText: 'poster' }).first();
    await run.waitFor({ timeout: 20_000 });
    const row = await auditRow('release 1.2 is out');
    assert.equal(row.success, true);
    assert.equal(row.approver, 'dock:owner');
    assert.match(provider.requests.at(-1)?.toolResults[0]?.content ?? '', /release 1\.2 is out|id/);
    assert.deepEqual(pageErrors, []);
  });
});
