/**
 * The computer view (MCP Apps) over a real `paddock serve` and the official MCP client: a client
 * that declares the extension gets the `ui://` view, the `_meta.ui` of the tools that show it and
 * the view's own tools (audited `via: app`); a client without it sees the tools exactly as a
 * plain client always did and cannot reach a view tool; a third party's view never reaches the
 * owner's computer, terminal or approvals.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Client } from '@modelcontextprotocol/client';
import { clientOptions, connectHttp, type Negotiation, stdioTransport } from '../helpers/clients.js';
import { grantTokens } from '../helpers/oauth.js';
import {
  runCli,
  type ServeProcess,
  startServe,
  type TempProject,
  tempProject,
} from '../helpers/paddock-process.js';
import { pollUntil } from '../helpers/poll.js';

type Structured = Record<string, unknown>;
type Listed = { name: string; _meta?: Record<string, unknown> };

const VIEW_URI = 'ui://paddock/computer.html';
const APPS = {
  extensions: { 'io.modelcontextprotocol/ui': { mimeTypes: ['text/html;profile=mcp-app'] } },
};
const VIEW_TOOLS = [
  'view_decide_approval',
  'view_fetch_preview',
  'view_open_terminal',
  'view_type_in_terminal',
  'view_watch_computer',
];

async function call(client: Client, name: string, args: Structured): Promise<Structured> {
  const r = (await client.callTool({ name, arguments: args }).catch((e: Error) => ({
    isError: true,
    content: [{ text: JSON.stringify({ code: 'PROTOCOL_ERROR', message: e.message }) }],
  }))) as {
    isError?: boolean;
    structuredContent?: Structured;
    content: { text: string }[];
  };
  if (r.isError) return { error: JSON.parse(r.content[0]!.text) as Structured };
  return r.structuredContent ?? (JSON.parse(r.content[0]!.text) as Structured);
}

/** The audit rows of `tool`, newest last, as `paddock audit --json` prints them. */
async function auditRows(
  project: TempProject,
  tool: string,
): Promise<{ via: string; caller: string; success: boolean }[]> {
  const { stdout } = await runCli(project, ['audit', '--tool', tool, '--json']);
  return stdout
    .trim()
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as { via: string; caller: string; success: boolean });
}

describe('the computer view as an MCP App', () => {
  let project: TempProject;
  let serve: ServeProcess;
  const open: Client[] = [];
  const connect = async (name: string, negotiation: Negotiation, apps: boolean, token = serve.token) => {
    const client = await connectHttp(serve.url, token, name, {
      negotiation,
      ...(apps ? { capabilities: APPS } : {}),
    });
    open.push(client);
    return client;
  };

  before(async () => {
    project = tempProject('computer:\n  autoLaunch: false\npermissions:\n  run_command: ask\n');
    serve = await startServe(project);
  });
  after(async () => {
    await Promise.all(open.map((c) => c.close().catch(() => {})));
    await serve?.stop();
    project?.cleanup();
  });

  for (const negotiation of ['legacy', 'modern'] as const) {
    it(`a ${negotiation}-era client without the extension lists exactly the plain tools and cannot call a view tool`, async () => {
      const plain = await connect(`plain-${negotiation}`, negotiation, false);
      const apps = await connect(`apps-${negotiation}`, negotiation, true);
      const plainTools = (await plain.listTools()).tools as Listed[];
      const appTools = (await apps.listTools()).tools as Listed[];
      assert.ok(plainTools.every((t) => t._meta === undefined && !t.name.startsWith('view_')));
      // the apps client's listing is the plain one plus the view tools and their _meta
      const stripped = appTools.filter((t) => !VIEW_TOOLS.includes(t.name)).map(({ _meta, ...rest }) => rest);
      assert.deepEqual(stripped, plainTools);
      assert.deepEqual(
        appTools
          .filter((t) => VIEW_TOOLS.includes(t.name))
          .map((t) => t.name)
          .sort(),
        VIEW_TOOLS,
      );
      for (const name of ['launch_computer', 'get_computer_status', 'run_command', 'navigate_preview']) {
        const meta = appTools.find((t) => t.name === name)?._meta as { ui?: { resourceUri?: string } };
        assert.equal(meta?.ui?.resourceUri, VIEW_URI, name);
      }
      for (const name of VIEW_TOOLS) {
        const meta = appTools.find((t) => t.name === name)?._meta as { ui?: { visibility?: string[] } };
        assert.deepEqual(meta?.ui?.visibility, ['app'], name);
      }
      assert.deepEqual((await plain.listResources()).resources, []);
      // the client that declared the extension reaches the view's tools in this era too
      const watched = await call(apps, 'view_watch_computer', {});
      assert.equal(watched.error, undefined, JSON.stringify(watched));
      assert.equal(typeof watched.version, 'string');
      // a client that did not declare the extension cannot reach a view tool by calling it
      const refused = await plain.callTool({ name: 'view_watch_computer', arguments: {} }).then(
        (r) => JSON.stringify(r),
        (e: Error) => e.message,
      );
      assert.match(refused, /view_watch_computer/);
      assert.doesNotMatch(refused, /lifecycle/);
    });
  }

  it('serves the view as text/html;profile=mcp-app, self-contained and without a credential', async () => {
    const apps = await connect('apps-resource', 'legacy', true);
    const listed = (await apps.listResources()).resources;
    assert.deepEqual(
      listed.map((r) => [r.uri, r.mimeType]),
      [[VIEW_URI, 'text/html;profile=mcp-app']],
    );
    const read = await apps.readResource({ uri: VIEW_URI });
    const content = read.contents[0] as { uri: string; mimeType: string; text: string };
    assert.equal(content.mimeType, 'text/html;profile=mcp-app');
    assert.match(content.text, /<html/);
    assert.ok(!content.text.includes(serve.token), 'the server token is not in the view');
    assert.doesNotMatch(content.text, /<script[^>]+src=|<link[^>]+href=/, 'the view loads no file');
    assert.ok(!content.text.includes(serve.url), "the view does not name the server's address");
    await assert.rejects(apps.readResource({ uri: 'ui://paddock/other.html' }), /No resource/);
  });

  it("a view tool call is audited via app as the client's own call", async () => {
    const apps = await connect('apps-audit', 'legacy', true);
    const state = await call(apps, 'view_watch_computer', {});
    assert.equal(state.error, undefined, JSON.stringify(state));
    assert.equal((state.computer as Structured).lifecycle, 'none');
    const rows = await auditRows(project, 'view_watch_computer');
    assert.ok(rows.length >= 1);
    assert.ok(
      rows.filter((r) => r.success).every((r) => r.via === 'app'),
      JSON.stringify(rows),
    );
    // the same client's model-facing calls stay direct
    await call(apps, 'get_computer_status', {});
    const status = await auditRows(project, 'get_computer_status');
    assert.equal(status.at(-1)?.via, 'direct');
  });

  it("a third party's view reaches neither the owner's computer, nor its terminal, nor its approvals", async () => {
    const owner = await connect('owner-apps', 'legacy', true);
    await call(owner, 'launch_computer', { profileId: 'shell' });
    const terminal = await call(owner, 'view_open_terminal', {});
    assert.equal(terminal.error, undefined, JSON.stringify(terminal));
    const ownerTerminal = terminal.terminalId as string;
    const { tokens } = await grantTokens(serve, { scope: 'tools computer', name: 'View Client' });
    const third = await connect('third-apps', 'legacy', true, tokens.access_token);
    const seen = await call(third, 'view_watch_computer', {});
    assert.equal(seen.error, undefined, JSON.stringify(seen));
    // its view shows its own (not yet launched) computer, never the owner's running one
    assert.equal((seen.computer as Structured).lifecycle, 'none');
    assert.deepEqual(seen.terminals, []);
    const typed = await call(third, 'view_type_in_terminal', { terminalId: ownerTerminal, data: 'echo x\r' });
    assert.ok(typed.error, 'typing into the owner terminal is refused');
    // the owner's run_command waits for a person; its card is in the owner's view only
    const running = call(owner, 'run_command', { script: 'echo approved-in-view', waitMs: 10_000 });
    const card = await pollUntil<{ id: string; tool: string } | undefined>(
      async () => {
        const s = await call(owner, 'view_watch_computer', {});
        return (s.approvals as { id: string; tool: string }[])[0];
      },
      "the owner's approval card",
      15_000,
      100,
    );
    assert.ok(card);
    assert.equal(card.tool, 'run_command');
    const thirdState = await call(third, 'view_watch_computer', {});
    assert.deepEqual(thirdState.approvals, [], "the third party's view lists no approval of the owner");
    const decided = await call(third, 'view_decide_approval', { approvalId: card.id, decision: 'approve' });
    assert.equal((decided.error as Structured).code, 'NOT_FOUND');
    // nor does another conversation of the same owner decide this one's call
    const sibling = await connect('owner-sibling', 'legacy', true);
    assert.deepEqual((await call(sibling, 'view_watch_computer', {})).approvals, []);
    const bySibling = await call(sibling, 'view_decide_approval', {
      approvalId: card.id,
      decision: 'approve',
    });
    assert.equal((bySibling.error as Structured).code, 'NOT_FOUND');
    // an oversized paste is refused before it reaches the terminal
    const flood = await call(owner, 'view_type_in_terminal', {
      terminalId: ownerTerminal,
      data: 'x'.repeat(5000),
    });
    assert.equal((flood.error as Structured).code, 'INVALID_ARGUMENT');
    const ownerDecided = await call(owner, 'view_decide_approval', {
      approvalId: card.id,
      decision: 'approve',
    });
    assert.equal(ownerDecided.error, undefined, JSON.stringify(ownerDecided));
    const ran = await running;
    assert.match(String(ran.stdout), /approved-in-view/);
    const rows = await auditRows(project, 'view_type_in_terminal');
    assert.ok(
      rows.some((r) => r.via === 'app' && !r.success && r.caller !== 'mcp:owner'),
      JSON.stringify(rows),
    );
  });

  it('a 2026-era call shown in the view waits for the card and runs once the view approves it', async () => {
    const apps = await connect('apps-modern-approve', 'modern', true);
    await call(apps, 'launch_computer', { profileId: 'shell' });
    const running = call(apps, 'run_command', { script: 'echo modern-approved', waitMs: 10_000 });
    const card = await pollUntil<{ id: string; tool: string } | undefined>(
      async () =>
        ((await call(apps, 'view_watch_computer', {})).approvals as { id: string; tool: string }[])[0],
      'the approval card of the 2026-era call',
      15_000,
      100,
    );
    assert.ok(card);
    const decided = await call(apps, 'view_decide_approval', { approvalId: card.id, decision: 'approve' });
    assert.equal(decided.error, undefined, JSON.stringify(decided));
    const ran = await running;
    assert.match(String(ran.stdout), /modern-approved/, JSON.stringify(ran));
    // a denial on the card reaches the model as PERMISSION_REQUIRED with the view's reason
    const denied = call(apps, 'run_command', { script: 'echo never-runs', waitMs: 10_000 });
    const second = await pollUntil<{ id: string } | undefined>(
      async () => ((await call(apps, 'view_watch_computer', {})).approvals as { id: string }[])[0],
      'the card of the call to deny',
      15_000,
      100,
    );
    assert.ok(second);
    await call(apps, 'view_decide_approval', { approvalId: second.id, decision: 'deny' });
    const refused = (await denied).error as Structured;
    assert.equal(refused.code, 'PERMISSION_REQUIRED');
    assert.match(String(refused.message), /denied in the chat view/);
    const rows = await auditRows(project, 'view_decide_approval');
    assert.ok(
      rows.some((r) => r.success && r.via === 'app' && r.caller === 'mcp:owner'),
      JSON.stringify(rows),
    );
  });
});

describe('the computer view over stdio (`paddock mcp`)', () => {
  let project: TempProject;
  let serve: ServeProcess;
  const open: Client[] = [];

  before(async () => {
    project = tempProject('computer:\n  autoLaunch: false\n');
    serve = await startServe(project);
  });
  after(async () => {
    await Promise.all(open.map((c) => c.close().catch(() => {})));
    await serve?.stop();
    project?.cleanup();
  });

  for (const negotiation of ['legacy', 'modern'] as const) {
    it(`a ${negotiation}-era stdio client that declares the extension gets the view and its tools; one that does not, neither`, async () => {
      const apps = new Client(
        { name: `stdio-apps-${negotiation}`, version: '1.0.0' },
        clientOptions(negotiation, APPS) as never,
      );
      open.push(apps);
      await apps.connect(stdioTransport(project));
      const plain = new Client(
        { name: `stdio-plain-${negotiation}`, version: '1.0.0' },
        clientOptions(negotiation) as never,
      );
      open.push(plain);
      await plain.connect(stdioTransport(project));
      const appNames = ((await apps.listTools()).tools as Listed[]).map((t) => t.name);
      assert.ok(VIEW_TOOLS.every((n) => appNames.includes(n)));
      const plainTools = (await plain.listTools()).tools as Listed[];
      assert.ok(plainTools.every((t) => t._meta === undefined && !t.name.startsWith('view_')));
      const read = await apps.readResource({ uri: VIEW_URI });
      assert.equal((read.contents[0] as { mimeType: string }).mimeType, 'text/html;profile=mcp-app');
      const watched = await call(apps, 'view_watch_computer', {});
      assert.equal(watched.error, undefined, JSON.stringify(watched));
      const refused = await call(plain, 'view_watch_computer', {});
      assert.ok(refused.error, JSON.stringify(refused));
    });
  }
});

describe('the computer view where the policy does not let the view type', () => {
  let project: TempProject;
  let serve: ServeProcess;
  let client: Client | undefined;

  before(async () => {
    project = tempProject('computer:\n  autoLaunch: false\npermissions:\n  view_type_in_terminal: deny\n');
    serve = await startServe(project);
  });
  after(async () => {
    await client?.close().catch(() => {});
    await serve?.stop();
    project?.cleanup();
  });

  it('the view is told it may not type, the tool is not listed, and a call of it is refused', async () => {
    client = await connectHttp(serve.url, serve.token, 'apps-readonly', { capabilities: APPS });
    const names = ((await client.listTools()).tools as Listed[]).map((t) => t.name);
    assert.ok(names.includes('view_watch_computer'));
    assert.ok(!names.includes('view_type_in_terminal'));
    const state = await call(client, 'view_watch_computer', {});
    assert.equal(state.canType, false);
    const typed = await call(client, 'view_type_in_terminal', { terminalId: 'g1.term1', data: 'ls\r' });
    assert.ok(typed.error, JSON.stringify(typed));
    const rows = await auditRows(project, 'view_type_in_terminal');
    assert.ok(rows.length >= 1 && rows.every((r) => !r.success && r.via === 'app'), JSON.stringify(rows));
  });
});
