/**
 * The dock and the computer together in a real browser: a real `paddock serve` with real bwrap
 * computers, a real MCP client as the agent, Debian's chromium driven by playwright-core. The
 * agent and the person share the same terminal and preview. Saves test-artifacts/dock-computer.png.
 */

import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Client } from '@modelcontextprotocol/client';
import { type Browser, chromium, type Page } from 'playwright-core';
import { CHROMIUM, callOk, connectHttp } from '../helpers/clients.js';
import {
  REPO_ROOT,
  type ServeProcess,
  startServe,
  type TempProject,
  tempProject,
} from '../helpers/paddock-process.js';
import { pollUntil } from '../helpers/poll.js';

describe('the agent and the person share one computer in the dock', () => {
  let project: TempProject;
  let serve: ServeProcess;
  let browser: Browser;
  let page: Page;
  let agent: Client;
  let terminalId: string;
  const pageErrors: string[] = [];

  const call = (name: string, args: Record<string, unknown>) => callOk(agent, name, args);

  async function terminalText(cursor?: string): Promise<{ text: string; next: string }> {
    const r = await call('read_terminal_output', {
      terminalId,
      byteLimit: 65536,
      ...(cursor ? { cursor } : {}),
    });
    return { text: String(r.output), next: String(r.nextCursor) };
  }

  const screen = async () =>
    (await page.locator(`.xterm-host[data-terminal="${terminalId}"] .xterm-rows`).textContent()) ?? '';

  before(async () => {
    project = tempProject('computer:\n  defaultProfile: python\n');
    serve = await startServe(project);
    agent = await connectHttp(serve.url, serve.token, 'dock-computer-agent');
    await call('launch_computer', { profileId: 'python' });
    await pollUntil(
      async () => (await call('get_computer_status', {})).lifecycle === 'running',
      'the computer to run',
    );
    browser = await chromium.launch(CHROMIUM);
    page = await (await browser.newContext({ viewport: { width: 1440, height: 900 } })).newPage();
    page.on('pageerror', (e) => pageErrors.push(e.message));
    await page.goto(await serve.loginLink());
    await page.waitForURL(`${serve.url}/`);
  });

  after(async () => {
    await agent?.close().catch(() => undefined);
    await browser?.close().catch(() => undefined);
    await serve?.stop();
    project?.cleanup();
  });

  it('shows in the page what the agent types into a terminal it created', async () => {
    const created = await call('create_terminal', {});
    terminalId = String(created.terminalId ?? created.id);
    await page.locator(`.tab[data-terminal="${terminalId}"].active`).waitFor();
    await call('send_terminal_input', { terminalId, text: 'echo from-agent-$((6*7))\n' });
    await pollUntil(async () => (await screen()).includes('from-agent-42'), 'the agent’s echo on the page');
  });

  it('delivers what the person types in the page to the agent’s read_terminal_output', async () => {
    await page.locator(`.xterm-host[data-terminal="${terminalId}"]`).click();
    await page.keyboard.type('echo from-person-$((3*3))');
    await page.keyboard.press('Enter');
    await pollUntil(
      async () => (await terminalText()).text.includes('from-person-9'),
      'the person’s echo in the tool',
    );
  });

  it('shows a web server started by the agent in the preview pane', async () => {
    await call('run_command', {
      script:
        'mkdir -p /workspace/site && echo hello-preview > /workspace/site/hello.txt && cd /workspace/site && ' +
        '(python3 -m http.server 8000 >/dev/null 2>&1 &); ' +
        'for i in $(seq 100); do python3 -c "import socket; socket.create_connection((\'127.0.0.1\', 8000), 0.2)" 2>/dev/null && break; sleep 0.1; done',
      waitMs: 5000,
    });
    const nav = await call('navigate_preview', { path: '/' });
    assert.match(JSON.stringify(nav), /8000/, 'navigate_preview reports the observed preview port');
    const frame = page.frameLocator('[data-testid=preview-frame]');
    await frame.locator('a[href="hello.txt"]').waitFor({ timeout: 15_000 });
    assert.match((await frame.locator('body').textContent()) ?? '', /Directory listing/);
  });

  it('lets a preview page load from its own server but from no other origin', async () => {
    // the person's browser has a network; the computer's pages must not use it (CSP of the relay)
    const outside = createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/javascript' });
      res.end('window.outside = true;');
    });
    await new Promise<void>((resolve) => outside.listen(0, '127.0.0.1', resolve));
    const other = `http://127.0.0.1:${(outside.address() as AddressInfo).port}/outside.js`;
    const probe = `<!doctype html><title>probe</title><body><script>
      const out = (k, v) => { const p = document.createElement('p'); p.id = k; p.textContent = v; document.body.append(p); };
      const load = (k, src) => { const s = document.createElement('script'); s.src = src; s.onload = () => out(k, 'loaded'); s.onerror = () => out(k, 'blocked'); document.head.append(s); };
      load('own', 'probe.js');
      load('other', ${JSON.stringify(other)});
    </script></body>`;
    await call('write_file', {
      path: '/workspace/site/probe.js',
      content: 'window.probed = true;\n',
      overwrite: true,
    });
    await call('write_file', { path: '/workspace/site/probe.html', content: probe, overwrite: true });
    await call('navigate_preview', { path: '/probe.html' });
    const frame = page.frameLocator('[data-testid=preview-frame]');
    assert.equal(await frame.locator('#own').textContent({ timeout: 15_000 }), 'loaded');
    try {
      assert.equal(await frame.locator('#other').textContent({ timeout: 15_000 }), 'blocked');
    } finally {
      outside.close();
    }
  });

  it('shows the agent’s write_file in the audit stream as it happens', async () => {
    await call('write_file', { path: '/workspace/notes.md', content: '# notes\n', overwrite: true });
    await page.locator('.audit-row', { hasText: 'write_file' }).first().waitFor();
  });

  it('nests the tool calls a command made through the tool channel under its run_command', async () => {
    const job = await call('run_command', {
      script: 'paddock-tool call save_memory \'{"content":"from a script"}\' > /dev/null && echo saved',
      waitMs: 10_000,
    });
    assert.match(String(job.stdout), /saved/);
    const nested = page.locator('.audit-row .children .audit-row', { hasText: 'save_memory' });
    await nested.first().waitFor();
    assert.match((await nested.first().textContent()) ?? '', /save_memory/);
  });

  it('interrupts a running program with ctrl_c', async () => {
    await call('send_terminal_input', { terminalId, text: 'sleep 100; echo not-interrupted\n' });
    // ctrl_c must reach a running sleep, not a shell still reading the line
    await pollUntil(
      async () =>
        String(
          (await call('run_command', { script: 'pgrep -x sleep >/dev/null && echo up' })).stdout,
        ).includes('up'),
      'sleep to run in the terminal',
      15_000,
    );
    const before = (await terminalText()).next;
    await call('send_terminal_input', { terminalId, key: 'ctrl_c' });
    await call('send_terminal_input', { terminalId, text: 'echo after-interrupt\n' });
    const seen = await pollUntil(
      async () => {
        const t = (await terminalText(before)).text;
        // the output line itself, not the echoed command line: only a shell freed by ctrl_c prints it
        return /(^|[\r\n])after-interrupt\r?\n/.test(t) ? t : '';
      },
      'the shell back after ctrl_c',
      15_000,
    );
    // the typed command line echoes the words; the program itself must never print them
    assert.doesNotMatch(seen, /(^|[\r\n])not-interrupted\r?\n/);
  });

  it('renders without page errors and saves a screenshot', async () => {
    mkdirSync(join(REPO_ROOT, 'test-artifacts'), { recursive: true });
    await page.screenshot({ path: join(REPO_ROOT, 'test-artifacts', 'dock-computer.png') });
    assert.deepEqual(pageErrors, []);
  });
});
