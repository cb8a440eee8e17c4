/**
 * The dock as a person reads it: clients and computers by name, a header that fits 1280 px,
 * activity rows that say what each call did with polls folded, a relaunch that says what it
 * deletes and can keep /workspace, and approval cards with a summary and the policy's verdict
 * (a call the policy refuses never reaches the card). A real `paddock serve`, real MCP clients,
 * Debian's chromium. Saves test-artifacts/dock-person-*-{1280x800,1920x1080}.png.
 */
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Client } from '@modelcontextprotocol/client';
import type { Browser, Page } from 'playwright-core';
import { callOk, connectHttp } from '../helpers/clients.js';
import { signedInDock } from '../helpers/dock-page.js';
import {
  REPO_ROOT,
  type ServeProcess,
  startServe,
  type TempProject,
  tempProject,
} from '../helpers/paddock-process.js';
import { pollUntil } from '../helpers/poll.js';

const ARTIFACTS = join(REPO_ROOT, 'test-artifacts');

async function shoot(page: Page, name: string): Promise<void> {
  mkdirSync(ARTIFACTS, { recursive: true });
  await page.setViewportSize({ width: 1280, height: 800 });
  await page.screenshot({ path: join(ARTIFACTS, `dock-person-${name}-1280x800.png`) });
  await page.setViewportSize({ width: 1920, height: 1080 });
  await page.screenshot({ path: join(ARTIFACTS, `dock-person-${name}-1920x1080.png`) });
  await page.setViewportSize({ width: 1280, height: 800 });
}

describe('the dock for a person', { concurrency: false }, () => {
  let project: TempProject;
  let serve: ServeProcess;
  let agent: Client;
  let browser: Browser;
  let page: Page;
  const pageErrors: string[] = [];

  const call = (name: string, args: Record<string, unknown>) => callOk(agent, name, args);

  before(async () => {
    project = tempProject(
      ['permissions:', '  http_post: ask', 'policy:', '  http:', '    allow: ["127.0.0.1:9"]', ''].join('\n'),
    );
    serve = await startServe(project);
    agent = await connectHttp(serve.url, serve.token, 'claude-code-with-a-rather-long-client-name');
    await call('launch_computer', { profileId: 'shell' });
    await pollUntil(
      async () => (await call('get_computer_status', {})).lifecycle === 'running',
      'the computer to run',
    );
    ({ browser, page } = await signedInDock(serve, { width: 1280, height: 800 }));
    page.on('pageerror', (e) => pageErrors.push(e.message));
    const url = String((await call('get_computer_status', {})).url);
    await page.goto(url);
    await page.getByTestId('connection').filter({ hasText: 'Live' }).waitFor();
  });

  after(async () => {
    await agent?.close().catch(() => undefined);
    await browser?.close().catch(() => undefined);
    await serve?.stop();
    project?.cleanup();
  });

  it('names the client and its computer instead of session ids, and the header fits 1280 px', async () => {
    const select = page.getByTestId('computer-select');
    await pollUntil(
      async () => ((await select.locator('option:checked').textContent()) ?? '').includes('claude-code'),
      'the computer labelled by its client',
    );
    const label = (await select.locator('option:checked').textContent()) ?? '';
    assert.doesNotMatch(label, /private:mcp:/);
    assert.match(
      label,
      /claude-code-with-a-rather-long-client-name 1\.0\.0 #\w{4}’s computer · shell · running/,
    );
    for (const id of ['launch', 'clients-link', 'connection', 'lifecycle', 'profile-select']) {
      const box = await page.getByTestId(id).boundingBox();
      assert.ok(box, `${id} is shown`);
      assert.ok(box.x >= 0 && box.x + box.width <= 1280, `${id} fits in 1280 px: ${JSON.stringify(box)}`);
    }
    // nothing in the header overlaps its neighbour
    const boxes = await page.locator('header.topbar > *:visible').evaluateAll((els) =>
      els.map((e) => {
        const r = e.getBoundingClientRect();
        return { left: r.left, right: r.right, what: e.className || e.tagName };
      }),
    );
    for (let i = 1; i < boxes.length; i++)
      assert.ok(
        boxes[i]!.left >= boxes[i - 1]!.right - 1,
        `${boxes[i - 1]!.what} overlaps ${boxes[i]!.what}`,
      );
  });

  it('reads the activity as work: a summary per row, the client’s name, and polls folded into one row', async () => {
    const job = await call('run_command', { script: 'echo summary-marker', waitMs: 5000 });
    for (let i = 0; i < 3; i++) await call('read_job', { jobId: job.jobId });
    const row = page.locator('.audit-row[data-tool=run_command]').first();
    await row.getByTestId('audit-summary').filter({ hasText: 'runs echo summary-marker' }).waitFor();
    assert.match(
      (await row.locator('.caller').textContent()) ?? '',
      /^claude-code-with-a-rather-long-client-name 1\.0\.0 #\w{4}$/,
    );
    await page
      .locator('.audit-row[data-tool=read_job]:visible')
      .getByTestId('audit-folded')
      .filter({ hasText: '×3' })
      .waitFor();
    assert.equal(await page.locator('.audit-row[data-tool=read_job]:visible').count(), 1);
    await shoot(page, 'activity');
  });

  it('refuses at once a call the policy denies, and shows a card with a summary and the verdict for one it allows', async () => {
    const denied = await agent.callTool({
      name: 'http_post',
      arguments: { url: 'https://not-allowed.example/hook', json: '{"a":1}' },
    });
    assert.equal(denied.isError, true);
    assert.match(JSON.stringify(denied.content), /POLICY_DENIED.*Nobody was asked/);
    assert.equal(await page.getByTestId('approval').count(), 0);

    const pending = agent.callTool({
      name: 'http_post',
      arguments: { url: 'http://127.0.0.1:9/hook', json: '{"deploy":"staging"}' },
    });
    const card = page.getByTestId('approval').filter({ hasText: 'http_post' });
    await card.waitFor();
    assert.equal(
      await card.getByTestId('approval-summary').textContent(),
      'http_post POST to http://127.0.0.1:9/hook',
    );
    assert.match(
      (await card.getByTestId('approval-verdict').textContent()) ?? '',
      /Policy: allowed by .*127\.0\.0\.1/,
    );
    assert.match(
      (await card.getByTestId('approval-who').textContent()) ?? '',
      /asked by claude-code-with-a-rather-long-client-name 1\.0\.0 #\w{4}/,
    );
    await shoot(page, 'approval');
    await card.getByTestId('approval-reason').fill('not now');
    await card.getByTestId('deny').click();
    const answer = await pending;
    assert.equal(answer.isError, true);
    assert.match(JSON.stringify(answer.content), /not now/);

    // the history: who asked, what, the decision, who made it and why; the refused call never asked
    const history = await page.context().newPage();
    await history.goto(`${serve.url}/approvals`);
    const rows = history.locator('#approvals tbody tr');
    assert.equal(await rows.count(), 1);
    const text = (await rows.first().textContent()) ?? '';
    assert.match(text, /http_post\s*POST to http:\/\/127\.0\.0\.1:9\/hook/);
    assert.match(text, /claude-code-with-a-rather-long-client-name 1\.0\.0 #\w{4}/);
    assert.match(text, /denied/);
    assert.match(text, /you \(dock, owner\)/);
    assert.match(text, /not now/);
    mkdirSync(ARTIFACTS, { recursive: true });
    await history.setViewportSize({ width: 1280, height: 800 });
    await history.screenshot({ path: join(ARTIFACTS, 'dock-person-approvals-history-1280x800.png') });
    await history.setViewportSize({ width: 1920, height: 1080 });
    await history.screenshot({ path: join(ARTIFACTS, 'dock-person-approvals-history-1920x1080.png') });
    await history.close();
  });

  it('a relaunch from the dock says /workspace is deleted, and keeps it when the person asks', async () => {
    await call('write_file', { path: '/workspace/notes.md', content: 'keep me\n', overwrite: true });
    const before = (await call('get_computer_status', {})).generation as number;
    await page.getByTestId('launch').click();
    const confirm = page.getByTestId('relaunch-confirm');
    await confirm.filter({ hasText: 'its /workspace is deleted, unless you keep it' }).waitFor();
    await shoot(page, 'relaunch');
    await confirm.getByTestId('relaunch-keep').click();
    await pollUntil(async () => {
      const s = await call('get_computer_status', {});
      return s.generation !== before && s.lifecycle === 'running';
    }, 'the new generation to run');
    const read = await call('read_file', { path: '/workspace/notes.md' });
    assert.equal(read.content, 'keep me\n');
    assert.deepEqual(pageErrors, []);
  });
});
