/**
 * Services and ports in the dock: a dev server the agent starts with `background: true` shows in
 * the jobs view with its port, the preview lists every listening port and shows any of them, and
 * the person cancels a job from the jobs view. A real `paddock serve`, a real MCP client as the
 * agent, Debian's chromium. Saves test-artifacts/dock-services-{1280x800,1920x1080}.png.
 */
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
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

describe('services and ports in the dock', { concurrency: false }, () => {
  let project: TempProject;
  let serve: ServeProcess;
  let agent: Client;
  let browser: Browser;
  let page: Page;
  const pageErrors: string[] = [];

  const call = (name: string, args: Record<string, unknown>) => callOk(agent, name, args);

  before(async () => {
    project = tempProject('computer:\n  defaultProfile: python\n');
    serve = await startServe(project);
    agent = await connectHttp(serve.url, serve.token, 'services-agent');
    await call('launch_computer', { profileId: 'python' });
    await pollUntil(
      async () => (await call('get_computer_status', {})).lifecycle === 'running',
      'the computer to run',
    );
    ({ browser, page } = await signedInDock(serve, { width: 1280, height: 800 }));
    page.on('pageerror', (e) => pageErrors.push(e.message));
  });

  after(async () => {
    await agent?.close().catch(() => undefined);
    await browser?.close().catch(() => undefined);
    await serve?.stop();
    project?.cleanup();
  });

  it('shows a background server as a service with its port, and previews any listening port from the list', async () => {
    await call('run_command', {
      script:
        'mkdir -p /workspace/a /workspace/b && echo site-a > /workspace/a/a.txt && echo site-b > /workspace/b/b.txt',
      waitMs: 5000,
    });
    const a = await call('run_command', {
      script: 'cd /workspace/a && exec python3 -m http.server 8000 --bind 127.0.0.1',
      background: true,
      waitMs: 0,
    });
    const b = await call('run_command', {
      script: 'cd /workspace/b && exec python3 -m http.server 5173 --bind 127.0.0.1',
      background: true,
      waitMs: 0,
    });
    await pollUntil(async () => {
      const ports = (await call('get_computer_status', {})).listeningPorts as number[];
      return ports.includes(8000) && ports.includes(5173);
    }, 'both servers to listen');

    await page.locator('[data-tab=jobs]').click();
    const rowB = page.locator(`.job-row[data-job="${String(b.jobId)}"]`);
    await rowB.locator('.chip.service').waitFor();
    await rowB.locator('.port-chip[data-port="5173"]').waitFor({ timeout: 15_000 });
    await page.locator(`.job-row[data-job="${String(a.jobId)}"] .port-chip[data-port="8000"]`).waitFor();

    // the preview's list of listening ports: any of them opens in the pane
    await page.getByTestId('preview-ports').locator('[data-port="5173"]').waitFor({ timeout: 15_000 });
    await page.getByTestId('preview-ports').locator('[data-port="5173"]').click();
    const frame = page.frameLocator('[data-testid=preview-frame]');
    await frame.locator('a[href="b.txt"]').waitFor({ timeout: 15_000 });
    await page.getByTestId('preview-ports').locator('[data-port="8000"]').click();
    await frame.locator('a[href="a.txt"]').waitFor({ timeout: 15_000 });
    assert.equal(await page.getByTestId('preview-port').inputValue(), '8000');

    mkdirSync(ARTIFACTS, { recursive: true });
    await page.screenshot({ path: join(ARTIFACTS, 'dock-services-1280x800.png') });
    await page.setViewportSize({ width: 1920, height: 1080 });
    await page.screenshot({ path: join(ARTIFACTS, 'dock-services-1920x1080.png') });
    await page.setViewportSize({ width: 1280, height: 800 });
  });

  it('cancels a job from the jobs view through cancel_job, audited as the person at the dock', async () => {
    const job = await call('run_command', { script: 'sleep 600', timeoutMs: 300_000, waitMs: 0 });
    const row = page.locator(`.job-row[data-job="${String(job.jobId)}"]`);
    await row.getByTestId('job-cancel').click();
    await page.locator(`.job-row.canceled[data-job="${String(job.jobId)}"]`).waitFor({ timeout: 15_000 });
    const r = await call('read_job', { jobId: job.jobId });
    assert.equal(r.state, 'cancelled');
    const audit = rows(project.dataDir).filter((x) => x.tool === 'cancel_job');
    assert.equal(audit.length, 1);
    assert.match(String(audit[0]!.caller), /^dock:/);
    assert.deepEqual(pageErrors, []);
  });
});
