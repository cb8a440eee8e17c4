/**
 * A server nobody started by hand: a desktop-style MCP client runs `paddock mcp` over stdio (the
 * bridge starts the server in the background), the person gets into the dock with `paddock open`,
 * and both use the same terminal — in Debian's chromium, against real bwrap computers.
 */

import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Client } from '@modelcontextprotocol/client';
import { type Browser, chromium, type Page } from 'playwright-core';
import { CHROMIUM, callOk, connectStdio } from '../helpers/clients.js';
import { runCli, type TempProject, tempProject } from '../helpers/paddock-process.js';
import { pollUntil } from '../helpers/poll.js';

describe('the dock of a server started by a stdio bridge', () => {
  let project: TempProject;
  let browser: Browser;
  let page: Page;
  let agent: Client;
  let terminalId: string;

  const call = (name: string, args: Record<string, unknown>) => callOk(agent, name, args);

  const screen = async () =>
    (await page.locator(`.xterm-host[data-terminal="${terminalId}"] .xterm-rows`).textContent()) ?? '';

  before(async () => {
    project = tempProject();
    agent = await connectStdio(project, 'stdio-desktop-client');
    await call('launch_computer', { profileId: 'shell' });
    await pollUntil(
      async () => (await call('get_computer_status', {})).lifecycle === 'running',
      'the computer to run',
      60_000,
    );
    const open = await runCli(project, ['open', '--print']);
    assert.equal(open.code, 0, open.stderr);
    const link = open.stdout.trim();
    browser = await chromium.launch(CHROMIUM);
    page = await (await browser.newContext({ viewport: { width: 1280, height: 800 } })).newPage();
    await page.goto(link);
    await page.waitForURL(new URL('/', link).href);
  });

  after(async () => {
    await agent?.close().catch(() => undefined);
    await browser?.close().catch(() => undefined);
    project?.cleanup();
  });

  it('shows in the page the terminal output of a computer that a stdio client drives', async () => {
    const created = await call('create_terminal', {});
    terminalId = String(created.terminalId ?? created.id);
    await page.locator(`.tab[data-terminal="${terminalId}"].active`).waitFor();
    await call('send_terminal_input', { terminalId, text: 'echo from-stdio-$((6*7))\n' });
    await pollUntil(
      async () => (await screen()).includes('from-stdio-42'),
      'the stdio client’s echo on the page',
    );
  });

  it('delivers what the person types in the page to the stdio client’s read_terminal_output', async () => {
    await page.locator(`.xterm-host[data-terminal="${terminalId}"]`).click();
    await page.keyboard.type('echo from-person-$((3*3))');
    await page.keyboard.press('Enter');
    await pollUntil(async () => {
      const r = await call('read_terminal_output', { terminalId, byteLimit: 65536 });
      return String(r.output).includes('from-person-9');
    }, 'the person’s echo in the stdio client’s tool');
  });
});
