/**
 * WebMCP in the dock, in real Chromium: the signed-in page registers the computer's tools with
 * the Web Model Context API (the polyfill here), with the same names, descriptions and input
 * schemas an MCP client lists; a call made in the page runs on the server through the gateway
 * (`via: webmcp`, audited, permissions applied), and the registration ends with the page.
 */
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Client } from '@modelcontextprotocol/client';
import type { Browser, Page } from 'playwright-core';
import { rows } from '../helpers/audit-rows.js';
import { connectHttp } from '../helpers/clients.js';
import { signedInDock } from '../helpers/dock-page.js';
import {
  REPO_ROOT,
  type ServeProcess,
  startServe,
  type TempProject,
  tempProject,
} from '../helpers/paddock-process.js';
import { pollUntil } from '../helpers/poll.js';
import { type PageTool, pageCall, pageTools } from '../helpers/webmcp-page.js';

const UI_INDEX = join(REPO_ROOT, 'dist', 'ui', 'index.html');

describe('WebMCP tools in the dock', () => {
  let project: TempProject;
  let serve: ServeProcess;
  let browser: Browser;
  let page: Page;
  let client: Client;

  before(async () => {
    assert.ok(
      existsSync(UI_INDEX),
      `The dock page is not built (${UI_INDEX}); run \`npm run build:ui\` first.`,
    );
    project = tempProject('permissions:\n  navigate_preview: deny\ncomputer:\n  defaultProfile: shell\n');
    serve = await startServe(project);
    client = await connectHttp(serve.url, serve.token);
    ({ browser, page } = await signedInDock(serve));
  });

  after(async () => {
    await client?.close().catch(() => undefined);
    await browser?.close().catch(() => undefined);
    await serve?.stop();
    project?.cleanup();
  });

  it('registers every computer tool an MCP client lists, with the same description and input schema', async () => {
    const { tools } = await client.listTools();
    const expected = tools.filter((t) =>
      [
        'list_profiles',
        'launch_computer',
        'get_computer_status',
        'run_command',
        'read_job',
        'cancel_job',
        'read_file',
        'write_file',
        'list_files',
        'create_terminal',
        'switch_terminal',
        'list_terminals',
        'send_terminal_input',
        'read_terminal_output',
        'read_logs',
        'create_launch_link',
        'checkpoint_computer',
        'list_checkpoints',
        'restore_checkpoint',
        'fork_computer',
      ].includes(t.name),
    );
    assert.equal(expected.length, 20, 'the computer tools this server allows');
    const registered = (await pollUntil(async () => {
      const listed = await pageTools(page);
      return listed.length >= expected.length ? listed : null;
    }, 'the page to register the computer tools')) as PageTool[];
    assert.deepEqual(registered.map((t) => t.name).sort(), expected.map((t) => t.name).sort());
    for (const tool of expected) {
      const mine = registered.find((t) => t.name === tool.name)!;
      assert.equal(mine.description, tool.description, `${tool.name}: the same description`);
      assert.deepEqual(mine.inputSchema, tool.inputSchema, `${tool.name}: the same input schema`);
    }
    assert.ok(!registered.some((t) => t.name === 'save_memory'), 'only the computer tools are offered');
    assert.ok(!registered.some((t) => t.name === 'navigate_preview'), 'a denied tool is not offered');
  });

  it('runs a command called in the page on the server, with separate stdout and stderr, audited as webmcp', async () => {
    const launched = await pageCall(page, 'launch_computer', { profileId: 'shell' });
    assert.notEqual(launched.isError, true, JSON.stringify(launched));
    const job = (await pollUntil(
      async () => {
        const r = await pageCall(page, 'run_command', {
          script: 'echo from-the-page; echo to-stderr >&2; exit 3',
          waitMs: 10_000,
        });
        if (r.isError) {
          const text = JSON.stringify(r);
          if (/NOT_RUNNING/.test(text)) return null; // still booting
          assert.fail(text);
        }
        return r.structuredContent as Record<string, unknown>;
      },
      'the command to run',
      120_000,
    )) as Record<string, unknown>;
    assert.equal(job.stdout, 'from-the-page\n');
    assert.equal(job.stderr, 'to-stderr\n');
    assert.equal(job.exitCode, 3);
    const row = rows(project.dataDir).find(
      (r) => r.tool === 'run_command' && r.input.includes('from-the-page'),
    );
    assert.ok(row, 'the call has an audit row');
    assert.equal(row.via, 'webmcp');
    assert.equal(row.caller, 'dock:owner');
  });

  it("refuses calls a page forges for a denied tool or a tool that is not the computer's, and records them", async () => {
    // a page that skips WebMCP and writes its own websocket messages
    const results = await page.evaluate(async () => {
      const ws = new (globalThis as unknown as { WebSocket: new (url: string) => WebSocketLike }).WebSocket(
        `ws://${(globalThis as unknown as { location: { host: string } }).location.host}/dock/ws`,
      );
      interface WebSocketLike {
        send(data: string): void;
        close(): void;
        onmessage: ((ev: { data: unknown }) => void) | null;
      }
      const seen: Record<string, unknown>[] = [];
      await new Promise<void>((resolve) => {
        ws.onmessage = (ev) => {
          const msg = JSON.parse(String(ev.data)) as Record<string, unknown>;
          if (msg.type === 'snapshot') {
            ws.send(
              JSON.stringify({
                type: 'webmcp.call',
                callId: 'a',
                name: 'navigate_preview',
                arguments: { path: '/' },
              }),
            );
            ws.send(
              JSON.stringify({
                type: 'webmcp.call',
                callId: 'b',
                name: 'save_memory',
                arguments: { content: 'x' },
              }),
            );
          }
          if (msg.type === 'webmcp.result') seen.push(msg);
          if (seen.length === 2) resolve();
        };
      });
      ws.close();
      return seen;
    });
    const byId = new Map(results.map((r) => [r.callId, r.result as Record<string, unknown>]));
    for (const id of ['a', 'b']) {
      const r = byId.get(id)!;
      assert.equal(r.isError, true, `call ${id} is refused`);
      assert.match(JSON.stringify(r.content), /POLICY_DENIED|PERMISSION_REQUIRED|NOT_FOUND/);
    }
    const all = rows(project.dataDir);
    for (const tool of ['navigate_preview', 'save_memory']) {
      const row = all.find((x) => x.tool === tool);
      assert.ok(row, `the refused ${tool} call has an audit row`);
      assert.equal(row.via, 'webmcp');
      assert.equal(row.success, false);
    }
  });

  it('ends the registration with the page: a reload registers the tools afresh', async () => {
    await page.reload();
    await page.getByTestId('connection').filter({ hasText: 'Live' }).waitFor();
    await pollUntil(async () => (await pageTools(page)).length >= 16, 'the reloaded page to register again');
    const names = (await pageTools(page)).map((t) => t.name);
    assert.equal(new Set(names).size, names.length, 'each tool registered once');
  });
});
