/**
 * The dock page over a server's life: a terminal's history replayed once per load, and a server
 * that stops while a page is open. A real `paddock serve`, a real MCP client as the agent and
 * Debian's chromium.
 */
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import type { Client } from '@modelcontextprotocol/client';
import type { Browser, Page } from 'playwright-core';
import { connectHttp } from '../helpers/clients.js';
import { signedInDock } from '../helpers/dock-page.js';
import {
  runCli,
  type ServeProcess,
  startServe,
  type TempProject,
  tempProject,
} from '../helpers/paddock-process.js';
import { pollUntil } from '../helpers/poll.js';

async function call(
  agent: Client,
  name: string,
  args: Record<string, unknown>,
): Promise<Record<string, unknown>> {
  const r = await agent.callTool({ name, arguments: args });
  assert.notEqual(r.isError, true, `${name}: ${JSON.stringify(r.content)}`);
  return r.structuredContent as Record<string, unknown>;
}

/** Every line the page's terminal holds (scrollback included), read from xterm's accessibility tree. */
async function terminalLines(page: Page, terminalId: string): Promise<string> {
  return (await page.locator(`.xterm-host[data-terminal="${terminalId}"] .xterm-rows`).textContent()) ?? '';
}

function count(text: string, needle: string): number {
  return text.split(needle).length - 1;
}

describe('the dock over a server’s life', { concurrency: false }, () => {
  const cleanups: Array<() => Promise<void> | void> = [];
  after(async () => {
    for (const c of cleanups.reverse()) await c();
  });

  async function serveWithPage(): Promise<{
    project: TempProject;
    serve: ServeProcess;
    agent: Client;
    browser: Browser;
    page: Page;
  }> {
    const project = tempProject();
    cleanups.push(() => project.cleanup());
    const serve = await startServe(project);
    cleanups.push(async () => void (await serve.stop()));
    const agent = await connectHttp(serve.url, serve.token, 'lifecycle-agent');
    cleanups.push(() => agent.close().catch(() => undefined));
    await call(agent, 'launch_computer', { profileId: 'shell' });
    await pollUntil(
      async () => (await call(agent, 'get_computer_status', {})).lifecycle === 'running',
      'the computer to run',
    );
    const { browser, page } = await signedInDock(serve, { width: 1280, height: 800 });
    cleanups.push(() => browser.close().catch(() => undefined));
    return { project, serve, agent, browser, page };
  }

  it('replays a terminal’s history once on every load and reload of the page', async () => {
    const { agent, page } = await serveWithPage();
    const created = await call(agent, 'create_terminal', {});
    const terminalId = String(created.terminalId);
    // typed before the shell's first prompt, the line would be echoed twice by the terminal
    // itself (once by the tty, once by readline): wait for the prompt as a person would
    await pollUntil(
      async () => /\$ $/.test(String((await call(agent, 'read_terminal_output', { terminalId })).output)),
      'the first prompt',
    );
    await call(agent, 'send_terminal_input', { terminalId, text: 'echo marker-$((20+22))\n' });
    await pollUntil(
      async () =>
        String((await call(agent, 'read_terminal_output', { terminalId })).output).includes('marker-42'),
      'the echo in the terminal',
    );
    for (const round of ['load', 'reload']) {
      if (round === 'reload') await page.reload();
      await page.getByTestId('connection').filter({ hasText: 'Live' }).waitFor();
      await pollUntil(
        async () => count(await terminalLines(page, terminalId), 'marker-42') >= 1,
        `the history on the page (${round})`,
      );
      // anything replayed twice would show up by now: the page has the terminal's prompt after it
      await call(agent, 'send_terminal_input', { terminalId, text: `echo after-${round}\n` });
      await pollUntil(
        async () => count(await terminalLines(page, terminalId), `after-${round}`) >= 2,
        `the live echo on the page (${round})`,
      );
      const text = await terminalLines(page, terminalId);
      // the command line and its output: each once
      assert.equal(count(text, 'echo marker-$((20+22))'), 1, `${round}: ${text}`);
      assert.equal(count(text, 'marker-42'), 1, `${round}: ${text}`);
    }
  });

  it('paddock stop ends the server while a dock page is open, and the page says so', async () => {
    const { project, serve, page } = await serveWithPage();
    const exited = new Promise<number | null>((resolve) => serve.child.once('exit', (code) => resolve(code)));
    const stop = await runCli(project, ['stop']);
    assert.equal(stop.code, 0, stop.stderr);
    assert.match(stop.stdout, /Stopped the Paddock server/);
    assert.equal(await exited, 0);
    await page.getByTestId('connection').filter({ hasNotText: 'Live' }).waitFor();
    // a new server can take the data directory at once
    const again = await startServe(project);
    cleanups.push(async () => void (await again.stop()));
  });
});
