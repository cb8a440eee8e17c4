/**
 * Both protocol eras on `paddock mcp` (stdio → bridge → the server's socket), with the SDK's
 * own client: the 2025 handshake keeps its per-connection session; `auto` and a pin to
 * 2026-07-28 land on the 2026 era, whose connections act on the owner's default computer (or
 * the one `--computer` names).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Client } from '@modelcontextprotocol/client';
import { connectStdio, type Negotiation } from '../helpers/clients.js';
import {
  runCli,
  type ServeProcess,
  startServe,
  type TempProject,
  tempProject,
} from '../helpers/paddock-process.js';
import { pollUntil } from '../helpers/poll.js';

function structured(result: unknown): Record<string, unknown> {
  const r = result as { isError?: boolean; structuredContent?: Record<string, unknown>; content?: unknown };
  assert.notEqual(r.isError, true, JSON.stringify(r.content));
  return r.structuredContent ?? {};
}

describe('both MCP eras over paddock mcp (stdio bridge)', () => {
  let project: TempProject;
  let serve: ServeProcess;
  const open: Client[] = [];
  const client = async (negotiation: Negotiation, extra: string[] = []) => {
    const c = await connectStdio(project, `stdio-${negotiation}`, extra, negotiation);
    open.push(c);
    return c;
  };

  before(async () => {
    project = tempProject('computer:\n  autoLaunch: false\n');
    serve = await startServe(project);
  });
  after(async () => {
    await Promise.all(open.map((c) => c.close().catch(() => {})));
    await serve?.stop();
    project?.cleanup();
  });

  it('auto and a pin land on 2026-07-28, the default on 2025, and each calls tools through the gateway', async () => {
    const auto = await client('auto');
    const pinned = await client('modern');
    const legacy = await client('legacy');
    assert.equal(auto.getProtocolEra(), 'modern');
    assert.equal(pinned.getProtocolEra(), 'modern');
    assert.equal(legacy.getProtocolEra(), 'legacy');
    for (const [i, c] of [auto, pinned, legacy].entries()) {
      structured(await c.callTool({ name: 'save_memory', arguments: { content: `stdio-era-${i}` } }));
    }
    const { stdout } = await runCli(project, ['audit', '--tool', 'save_memory', '--json']);
    const rows = stdout
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as { caller: string; input: string; principal?: string });
    const callerOf = (i: number) => rows.find((r) => r.input.includes(`stdio-era-${i}`))?.caller;
    assert.equal(callerOf(0), 'mcp:owner');
    assert.equal(callerOf(1), 'mcp:owner');
    assert.match(callerOf(2) ?? '', /^mcp:[0-9a-f-]{36}$/);
    const status = JSON.parse((await runCli(project, ['status', '--json'])).stdout) as {
      sessions: { client?: string }[];
    };
    assert.ok(
      status.sessions.some((s) => s.client?.startsWith('stdio-legacy')),
      'the 2025 connection is listed as a session',
    );
  });

  it('2026 connections share the owner default computer; --computer names another', async () => {
    const a = await client('modern');
    const launched = structured(
      await a.callTool({ name: 'launch_computer', arguments: { profileId: 'shell' } }),
    );
    await a.close();
    const b = await client('modern');
    const seen = await pollUntil(
      async () => {
        const s = structured(await b.callTool({ name: 'get_computer_status', arguments: {} }));
        return s.lifecycle === 'running' ? s : undefined;
      },
      'the launched computer running',
      60_000,
      200,
    );
    assert.equal(seen!.generation, launched.generation);
    const named = await client('modern', ['--computer', 'stdio-named']);
    const other = structured(
      await named.callTool({ name: 'launch_computer', arguments: { profileId: 'shell' } }),
    );
    assert.notEqual(other.generation, launched.generation);
    const listed = await runCli(project, ['computers', 'list', '--json']);
    assert.match(listed.stdout, /stdio-named/);
  });
});
