/**
 * The dock's computer switcher, in Debian's chromium against real bwrap computers: two MCP
 * sessions with a private computer each; the person picks either one in the dock, sees its
 * jobs and terminal, types into it, and can filter the activity to the computer shown.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Client } from '@modelcontextprotocol/client';
import type { Browser, Page } from 'playwright-core';
import { connectHttp } from '../helpers/clients.js';
import { signedInDock } from '../helpers/dock-page.js';
import { type ServeProcess, startServe, type TempProject, tempProject } from '../helpers/paddock-process.js';
import { pollUntil } from '../helpers/poll.js';

type Structured = Record<string, unknown>;

async function call(client: Client, name: string, args: Structured): Promise<Structured> {
  const r = await client.callTool({ name, arguments: args });
  assert.notEqual(r.isError, true, `${name}: ${JSON.stringify(r.content)}`);
  return r.structuredContent as Structured;
}

describe('the computer switcher of the dock', () => {
  let project: TempProject;
  let serve: ServeProcess;
  let browser: Browser;
  let page: Page;
  const agents: Client[] = [];
  const names: string[] = [];

  before(async () => {
    project = tempProject('computer:\n  defaultProfile: shell\n');
    serve = await startServe(project);
    for (const who of ['alpha', 'beta']) {
      const client = await connectHttp(serve.url, serve.token, who);
      agents.push(client);
      await call(client, 'launch_computer', { profileId: 'shell' });
      await pollUntil(
        async () => (await call(client, 'get_computer_status', {})).lifecycle === 'running',
        `${who}'s computer to run`,
        120_000,
      );
      await call(client, 'run_command', { script: `echo job-of-${who}`, waitMs: 10_000 });
    }
    ({ browser, page } = await signedInDock(serve, { width: 1400, height: 900 }));
  });

  after(async () => {
    for (const a of agents) await a.close().catch(() => undefined);
    await browser?.close().catch(() => undefined);
    await serve?.stop();
    project?.cleanup();
  });

  it('lists both computers with their profile, status, sessions and workspace', async () => {
    const select = page.getByTestId('computer-select');
    await pollUntil(
      async () => (await select.locator('option').count()) >= 2,
      'both computers in the switcher',
    );
    const options = await select.locator('option').evaluateAll((els) =>
      els.map((e) => ({
        value: (e as unknown as { value: string }).value,
        text: e.textContent ?? '',
        title: e.getAttribute('title') ?? '',
      })),
    );
    const privates = options.filter((o) => o.value.startsWith('private:mcp:'));
    assert.equal(privates.length, 2, JSON.stringify(options));
    for (const o of privates) {
      // labelled by the client that owns it; the details are in the title
      assert.match(o.text, /#\w{4}’s computer · shell · running$/);
      assert.match(o.title, /^private:mcp:.* · 1 session · idle .* · fresh workspace$/);
    }
    names.push(...privates.map((o) => o.value));
  });

  /** The computer of an agent's session, as the switcher names it (from the URL its status answers). */
  async function computerOf(agent: Client): Promise<{ name: string; generation: number }> {
    const status = await call(agent, 'get_computer_status', {});
    const name = new URL(String(status.url)).searchParams.get('computer') ?? '';
    return { name, generation: Number(status.generation) };
  }

  /** Picks a computer in the switcher and waits until the page shows it. */
  async function pick(agent: Client): Promise<void> {
    const { name, generation } = await computerOf(agent);
    await page.getByTestId('computer-select').selectOption(name);
    await pollUntil(
      async () => ((await page.getByTestId('status-details').textContent()) ?? '').includes(`g${generation}`),
      `the dock to show ${name}`,
    );
  }

  it('shows the jobs of the computer the person picks, and only those', async () => {
    await page.locator('[data-tab=jobs]').click();
    for (const [k, who] of ['alpha', 'beta'].entries()) {
      await pick(agents[k]!);
      const other = who === 'alpha' ? 'beta' : 'alpha';
      const text = await pollUntil(async () => {
        const t = (await page.getByTestId('job-list').textContent()) ?? '';
        return t.includes(`job-of-${who}`) ? t : null;
      }, `${who}'s job in the jobs panel`);
      assert.ok(!text?.includes(`job-of-${other}`), `${other}'s job is not shown beside ${who}'s`);
    }
  });

  it('delivers what the person types into the terminal of the computer shown to that computer only', async () => {
    const [alpha, beta] = agents as [Client, Client];
    const term = await call(beta, 'create_terminal', {});
    const terminalId = String(term.terminalId);
    await pick(beta);
    const host = page.locator(`.xterm-host[data-terminal="${terminalId}"]`);
    await page.locator(`.tab[data-terminal="${terminalId}"]`).click();
    await host.click();
    await page.keyboard.type('echo typed-$((20+22))');
    await page.keyboard.press('Enter');
    await pollUntil(
      async () =>
        String((await call(beta, 'read_terminal_output', { terminalId, byteLimit: 65536 })).output).includes(
          'typed-42',
        ),
      'the typing to reach beta’s terminal',
      60_000,
    );
    const alphaTerminals = await call(alpha, 'list_terminals', {});
    assert.ok(!JSON.stringify(alphaTerminals).includes(terminalId), 'the terminal is beta’s, not alpha’s');
  });

  it('opens the dock on the computer whose URL launch_computer answered', async () => {
    for (const agent of agents) {
      const status = await call(agent, 'get_computer_status', {});
      const url = String(status.url);
      const name = decodeURIComponent(new URL(url).searchParams.get('computer') ?? '');
      assert.ok(names.includes(name), `the URL names one of the computers: ${url}`);
      await page.goto(url);
      await pollUntil(
        async () => (await page.getByTestId('computer-select').inputValue()) === name,
        `the dock to show ${name}`,
      );
      assert.equal(new URL(page.url()).search, '', 'the page drops the parameter once it is used');
    }
  });

  it('filters the activity to the computer shown', async () => {
    const activity = page.locator('[data-tab=audit]');
    if (await activity.count()) await activity.click();
    const rows = page.locator('[data-testid=audit-list] > .audit-row');
    await pollUntil(async () => (await rows.count()) > 0, 'audit rows');
    await page.getByTestId('audit-only-watched').check();
    const watched = await page.getByTestId('computer-select').inputValue();
    const visible = await rows.evaluateAll((els) =>
      els
        .filter((e) => !(e as unknown as { hidden: boolean }).hidden)
        .map((e) => e.getAttribute('data-computer')),
    );
    assert.ok(visible.length > 0, 'the shown computer’s calls stay');
    assert.ok(
      visible.every((c) => c === watched),
      `only ${watched}: ${JSON.stringify(visible)}`,
    );
    await page.getByTestId('audit-only-watched').uncheck();
  });
});
