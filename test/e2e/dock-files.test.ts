/**
 * The dock's file browser: the person walks the computer's files, downloads one, uploads one
 * the agent then reads, and lists what changed in /workspace since launch; each step is a
 * computer tool called as the person (audited). Real `paddock serve`, real MCP client, Debian's
 * chromium. Saves test-artifacts/dock-files-{1280x800,1920x1080}.png.
 */
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Client } from '@modelcontextprotocol/client';
import type { Browser, Page } from 'playwright-core';
import { rows } from '../helpers/audit-rows.js';
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

describe('the dock’s file browser', { concurrency: false }, () => {
  let project: TempProject;
  let serve: ServeProcess;
  let agent: Client;
  let browser: Browser;
  let page: Page;
  const pageErrors: string[] = [];

  const call = (name: string, args: Record<string, unknown>) => callOk(agent, name, args);

  before(async () => {
    project = tempProject();
    serve = await startServe(project);
    agent = await connectHttp(serve.url, serve.token, 'files-agent');
    await call('launch_computer', { profileId: 'shell' });
    await pollUntil(
      async () => (await call('get_computer_status', {})).lifecycle === 'running',
      'the computer to run',
    );
    ({ browser, page } = await signedInDock(serve, { width: 1280, height: 800 }));
    page.on('pageerror', (e) => pageErrors.push(e.message));
    await page.goto(String((await call('get_computer_status', {})).url));
    await page.getByTestId('connection').filter({ hasText: 'Live' }).waitFor();
  });

  after(async () => {
    await agent?.close().catch(() => undefined);
    await browser?.close().catch(() => undefined);
    await serve?.stop();
    project?.cleanup();
  });

  it('walks the files, downloads one byte for byte, and uploads one the agent reads', async () => {
    await call('run_command', {
      script: 'mkdir -p /workspace/src && printf "line one\\nline two\\n" > /workspace/src/notes.txt',
      waitMs: 5000,
    });
    await page.locator('[data-tab=files]').click();
    const browserEl = page.getByTestId('file-browser');
    await browserEl.locator('.file-row.dir button', { hasText: 'src' }).click();
    const row = browserEl.locator('.file-row[data-file="/workspace/src/notes.txt"]');
    await row.waitFor();
    const [download] = await Promise.all([
      page.waitForEvent('download'),
      row.getByTestId('file-download').click(),
    ]);
    const saved = await download.path();
    assert.equal(readFileSync(saved).toString(), 'line one\nline two\n');

    await page.getByTestId('files-upload').setInputFiles({
      name: 'from-person.txt',
      mimeType: 'text/plain',
      buffer: Buffer.from('uploaded by the person\n'),
    });
    await browserEl.locator('.file-row[data-file="/workspace/src/from-person.txt"]').waitFor();
    const read = await call('read_file', { path: '/workspace/src/from-person.txt' });
    assert.equal(read.content, 'uploaded by the person\n');

    await page.getByTestId('files-changed').click();
    await page.getByTestId('files-changed-title').waitFor();
    await browserEl.locator('.file-row[data-file="/workspace/src/notes.txt"]').waitFor();
    await browserEl.locator('.file-row[data-file="/workspace/src/from-person.txt"]').waitFor();
    mkdirSync(ARTIFACTS, { recursive: true });
    await page.screenshot({ path: join(ARTIFACTS, 'dock-files-1280x800.png') });
    await page.setViewportSize({ width: 1920, height: 1080 });
    await page.screenshot({ path: join(ARTIFACTS, 'dock-files-1920x1080.png') });
    await page.setViewportSize({ width: 1280, height: 800 });

    const byDock = rows(project.dataDir)
      .filter((r) => r.caller === 'dock:owner')
      .map((r) => r.tool);
    for (const tool of ['list_files', 'read_file', 'write_file', 'run_command'])
      assert.ok(byDock.includes(tool), `${tool} by the person is audited: ${byDock.join(', ')}`);
    assert.deepEqual(pageErrors, []);
  });

  it('refuses a download outside the policy’s roots with the policy’s reason', async () => {
    const res = await page.evaluate(async () => {
      const r = await fetch('/dock/files/download?path=/etc/shadow');
      return { status: r.status, body: await r.text() };
    });
    assert.equal(res.status, 400);
    assert.match(res.body, /POLICY_DENIED/);
  });
});
