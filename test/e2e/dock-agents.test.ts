/**
 * The dock's agents tab in a real browser: a real `paddock serve` whose project has an agent
 * pointed (through OPENAI_BASE_URL) at a scripted model server started by this test, and
 * Debian's chromium driven by playwright-core. Saves test-artifacts/dock-agents.png.
 */
import assert from 'node:assert/strict';
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { type Browser, chromium, type Page } from 'playwright-core';
import { agentMd, TEST_KEY, writeProjectFiles } from '../fixtures/providers/agents-project.js';
import { type ScriptedProvider, startScriptedProvider } from '../fixtures/providers/scripted-provider.js';
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

const DIGEST = agentMd(
  `
name: digest
description: Summarises the day's notes every weekday morning.
provider: openai
model: gpt-test
tools: [save_memory, recall_memory]
schedules: [{cron: "0 9 * * 1-5", timezone: UTC}]
`,
  'Save a note that the digest ran, then answer with a one-line summary.',
);
const BROKEN = agentMd(
  'name: broken\ndescription: Has a bad schedule.\nprovider: openai\nmodel: m\nschedules: ["99 * * * *"]',
);

describe('the agents tab of the dock', () => {
  let provider: ScriptedProvider;
  let project: TempProject;
  let serve: ServeProcess;
  let browser: Browser;
  let page: Page;
  const pageErrors: string[] = [];

  before(async () => {
    assert.ok(
      existsSync(UI_INDEX),
      `The dock page is not built (${UI_INDEX}); run \`npm run build:ui\` first.`,
    );
    provider = await startScriptedProvider({ apiKey: TEST_KEY });
    project = tempProject();
    writeProjectFiles(project.dir, { agents: { digest: DIGEST, broken: BROKEN } });
    project.env.OPENAI_BASE_URL = provider.openaiBaseUrl;
    project.env.OPENAI_API_KEY = TEST_KEY;
    serve = await startServe(project);
    browser = await chromium.launch(CHROMIUM);
    page = await (await browser.newContext({ viewport: { width: 1440, height: 900 } })).newPage();
    page.on('pageerror', (e) => pageErrors.push(e.message));
    await page.goto(await serve.loginLink());
    await page.waitForURL(`${serve.url}/`);
    await page.getByTestId('connection').filter({ hasText: 'Live' }).waitFor();
  });

  after(async () => {
    await browser?.close().catch(() => undefined);
    await serve?.stop();
    project?.cleanup();
    await provider?.close();
  });

  it('lists the agent with its schedule and next run time, and the agent that did not load', async () => {
    await page.locator('[data-tab=agents]').click();
    const card = page.locator('.agent-card[data-agent=digest]');
    await card.waitFor();
    assert.match((await card.textContent()) ?? '', /Summarises the day's notes/);
    assert.match((await card.locator('.chip').textContent()) ?? '', /^openai \/ gpt-test$/);
    const schedule = card.getByTestId('agent-schedule');
    assert.match((await schedule.textContent()) ?? '', /0 9 \* \* 1-5\s*UTC/);
    const next = (await card.getByTestId('agent-next').textContent()) ?? '';
    assert.match(next, /^next (\d\d:\d\d|[A-Z][a-z]{2} \d\d:\d\d) · in \d+/);
    assert.match(next, /09:00|\d\d:00/);
    assert.match((await card.textContent()) ?? '', /never run/);
    const broken = page.locator('.agent-error[data-agent=broken]');
    await broken.waitFor();
    assert.match((await broken.textContent()) ?? '', /did not load.*AGENT\.md.*invalid cron expression "99/s);
  });

  it('runs the agent from Run now through the gateway and shows the run with its save_memory call', async () => {
    provider.script([
      { toolCalls: [{ name: 'save_memory', arguments: { content: 'digest ran from the dock' } }] },
      { text: 'Digest done: one note saved.', usage: { input: 120, output: 30 } },
    ]);
    const card = page.locator('.agent-card[data-agent=digest]');
    await card.getByTestId('agent-input').fill('Only today, please.');
    await card.getByTestId('agent-run-now').click();
    const run = page.locator('.run-row.succeeded').filter({ hasText: 'digest' }).first();
    await run.waitFor({ timeout: 20_000 });
    assert.match(
      (await run.locator(':scope > .row-head').textContent()) ?? '',
      /succeeded\s*digest\s*api\s*2 turns/,
    );
    await run.getByTestId('run-answer').filter({ hasText: 'Digest done: one note saved.' }).waitFor();
    const call = run.locator('[data-testid=run-calls] .audit-row[data-tool=save_memory]');
    await call.waitFor();
    assert.match((await call.locator(':scope > .row-head').textContent()) ?? '', /save_memory.*builtin.*ok/s);
    await call.locator(':scope > .row-head').click();
    await call.getByText('digest ran from the dock').waitFor();
    assert.match((await call.textContent()) ?? '', /agent:run_/);
    await card.locator('.state.succeeded').filter({ hasText: 'last run succeeded' }).waitFor();
    assert.equal(provider.requests.length, 2);
    assert.equal(provider.requests[0]?.model, 'gpt-test');
    assert.match(provider.requests[0]?.firstUserText ?? '', /Only today, please\./);
    assert.deepEqual(provider.requests[0]?.toolNames.sort(), ['recall_memory', 'save_memory']);
  });

  it('lists the run in the tool calls stream as the run’s own caller', async () => {
    await page.locator('[data-tab=audit]').click();
    const row = page.locator('[data-testid=audit-list] .audit-row[data-tool=save_memory]').first();
    await row.waitFor();
    assert.match((await row.textContent()) ?? '', /save_memory.*agent.*agent run #\w{4}.*ok/s);
    assert.match((await row.locator('.caller').getAttribute('title')) ?? '', /^agent:run_/);
    await page.locator('[data-tab=agents]').click();
  });

  it('renders without page errors and saves a screenshot of the agents tab', async () => {
    mkdirSync(ARTIFACTS, { recursive: true });
    await page.screenshot({ path: join(ARTIFACTS, 'dock-agents.png') });
    assert.deepEqual(pageErrors, []);
  });
});
