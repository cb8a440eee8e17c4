/**
 * Trust at the dock, in a real Chromium against a real `paddock serve` with a real upstream MCP
 * server and a real agent (an MCP client): a changed upstream tool raises a notice, shows its
 * diff and becomes callable only once the person accepts it; in a shared terminal each input
 * is marked with who typed it, the list filters by source, the person takes control (the
 * agent's input is refused), and the session downloads as an asciicast.
 */
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import type { Browser, Page } from 'playwright-core';
import { fixturePath } from '../fixtures/mcp/harness.js';
import { signedInDock } from '../helpers/dock-page.js';
import { type ServeProcess, startServe, type TempProject, tempProject } from '../helpers/paddock-process.js';
import { pollUntil } from '../helpers/poll.js';

type Result = {
  isError?: boolean;
  content?: { text?: string }[];
  structuredContent?: Record<string, unknown>;
};

describe('trust at the dock', () => {
  let project: TempProject;
  let serve: ServeProcess;
  let browser: Browser;
  let page: Page;
  let agent: Client;
  const pageErrors: string[] = [];
  const call = async (name: string, args: Record<string, unknown> = {}) =>
    (await agent.callTool({ name, arguments: args })) as Result;

  before(async () => {
    project = tempProject('permissions:\n  "fixture_*": auto\n');
    mkdirSync(join(project.dir, '.paddock'));
    writeFileSync(
      join(project.dir, '.paddock', 'mcp_servers.yaml'),
      `mcpServers:\n  fixture:\n    command: ${JSON.stringify(process.execPath)}\n    args: [${JSON.stringify(fixturePath('stdio-server'))}, "--mode", "normal"]\n    startup: eager\n`,
    );
    serve = await startServe(project);
    ({ browser, page } = await signedInDock(serve, { width: 1440, height: 900 }));
    page.on('pageerror', (e) => pageErrors.push(e.message));
    agent = new Client({ name: 'dock-trust-agent', version: '1.0.0' });
    await agent.connect(
      new StreamableHTTPClientTransport(new URL(`${serve.url}/mcp`), {
        requestInit: { headers: { authorization: `Bearer ${serve.token}` } },
      }),
    );
  });

  after(async () => {
    await agent?.close().catch(() => undefined);
    await browser?.close().catch(() => undefined);
    await serve?.stop();
    project?.cleanup();
  });

  it('a changed upstream tool raises a notice with its diff and is callable only after the person accepts it', async () => {
    await pollUntil(
      async () => (await agent.listTools()).tools.some((t) => t.name === 'fixture_echo'),
      'echo',
      20_000,
    );
    assert.notEqual((await call('fixture_mutate', { change: 'description' })).isError, true);
    await page
      .getByTestId('tool-notice')
      .filter({ hasText: /1 upstream tool of fixture changed/ })
      .waitFor();
    const card = page.locator('[data-testid=tool-change][data-tool=echo]');
    await card.waitFor();
    assert.match((await card.locator('.tool-diff .del').allTextContents()).join(''), /Fixture tool echo\./);
    assert.match((await card.locator('.tool-diff .add').allTextContents()).join(''), /id_rsa/);
    const refused = await call('fixture_echo', { message: 'x' });
    assert.equal(refused.isError, true);
    assert.match(refused.content?.[0]?.text ?? '', /TOOL_QUARANTINED/);
    assert.ok(!(await agent.listTools()).tools.some((t) => t.name === 'fixture_echo'), 'not listed');
    await card.getByRole('button', { name: 'Accept', exact: true }).click();
    await page.getByTestId('tool-notice').waitFor({ state: 'hidden' });
    const ok = await call('fixture_echo', { message: 'after review' });
    assert.notEqual(ok.isError, true, JSON.stringify(ok));
  });

  it('marks who typed each input, filters by source, holds the terminal for the person and exports the session', async () => {
    const launched = await call('launch_computer', { profileId: 'shell' });
    assert.notEqual(launched.isError, true, JSON.stringify(launched));
    await pollUntil(
      async () => (await call('get_computer_status')).structuredContent?.lifecycle === 'running',
      'the computer',
      60_000,
    );
    const created = await call('create_terminal');
    const terminalId = String(created.structuredContent?.terminalId);
    await page.locator(`.xterm-host[data-terminal="${terminalId}"]`).waitFor();
    await call('send_terminal_input', { terminalId, text: 'echo agent-said-$((40+2))\n' });
    await page
      .locator(`.xterm-host[data-terminal="${terminalId}"]`)
      .getByText('agent-said-42')
      .first()
      .waitFor();
    await page.locator(`.xterm-host[data-terminal="${terminalId}"] .xterm-screen`).click();
    await page.keyboard.type('echo person-said-$((2+3))');
    await page.keyboard.press('Enter');
    await page
      .locator(`.xterm-host[data-terminal="${terminalId}"]`)
      .getByText('person-said-5')
      .first()
      .waitFor();

    await page.locator('.input-mark[data-source=agent]').first().waitFor({ state: 'attached' });
    await page.locator('.input-mark[data-source=person]').first().waitFor({ state: 'attached' });
    await page.getByTestId('journal-toggle').click();
    const journal = page.getByTestId('terminal-journal');
    await journal.locator('.entry[data-source=person]').filter({ hasText: 'person-said' }).waitFor();
    await page.getByTestId('journal-filter').selectOption('agent');
    await pollUntil(
      async () =>
        (await journal.locator('.entry[data-source=person]').count()) === 0 &&
        (await journal.locator('.entry[data-source=agent]').count()) > 0,
      'only the agent’s inputs',
    );

    await page.getByTestId('terminal-hold').click();
    await page.getByTestId('terminal-held').filter({ hasText: 'held by dock:owner' }).waitFor();
    const listed = (await call('list_terminals')).structuredContent?.terminals as { heldBy: string | null }[];
    assert.equal(listed[0]?.heldBy, 'dock:owner');
    const refused = await call('send_terminal_input', { terminalId, text: 'echo should-not-run\n' });
    assert.equal(refused.isError, true);
    assert.match(refused.content?.[0]?.text ?? '', /TERMINAL_HELD_BY_PERSON/);
    await page.getByTestId('terminal-hold').click();
    await page.getByTestId('terminal-held').filter({ hasText: /^$/ }).waitFor({ state: 'attached' });

    const [download] = await Promise.all([
      page.waitForEvent('download'),
      page.getByTestId('terminal-cast').click(),
    ]);
    const chunks: Buffer[] = [];
    for await (const chunk of (await download.createReadStream()) ?? []) chunks.push(chunk as Buffer);
    const lines = Buffer.concat(chunks).toString('utf8').trimEnd().split('\n');
    assert.equal(JSON.parse(lines[0]!).version, 2);
    const events = lines.slice(1).map((l) => JSON.parse(l) as [number, string, string]);
    assert.ok(events.some((e) => e[1] === 'm' && /^person \(dock:owner\) typed$/.test(e[2])));
    assert.ok(events.some((e) => e[1] === 'i' && e[2].includes('agent-said')));
    await page.screenshot({ path: join(project.dir, 'trust.png') }).catch(() => undefined);
    assert.deepEqual(pageErrors, []);
  });
});
