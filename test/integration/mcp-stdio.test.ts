import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Client } from '@modelcontextprotocol/client';
import { connectStdio } from '../helpers/clients.js';
import { type TempProject, tempProject } from '../helpers/paddock-process.js';

const BUILTINS = ['http_get', 'http_post', 'save_memory', 'recall_memory', 'notify'];

describe('MCP over stdio (paddock mcp) with the official client', () => {
  let project: TempProject;
  let client: Client;

  before(async () => {
    project = tempProject(`notify:\n  channels:\n    log:\n      type: log\n`);
    client = await connectStdio(project);
  });

  after(async () => {
    await client?.close();
    project?.cleanup();
  });

  it('lists every built-in that needs no computer, with annotations and closed input schemas', async () => {
    const { tools } = await client.listTools();
    const names = tools.map((t) => t.name);
    for (const b of BUILTINS) assert.ok(names.includes(b), `missing ${b} in ${names.join(',')}`);
    for (const t of tools) {
      assert.equal(
        (t.inputSchema as { additionalProperties?: unknown }).additionalProperties,
        false,
        `${t.name} schema is open`,
      );
      assert.ok(t.annotations, `${t.name} has no annotations`);
    }
  });

  it('saves a memory and recalls it in a later call', async () => {
    const saved = await client.callTool({
      name: 'save_memory',
      arguments: { content: 'the deploy key rotates on Fridays' },
    });
    assert.notEqual(saved.isError, true, JSON.stringify(saved));
    const recalled = await client.callTool({ name: 'recall_memory', arguments: { query: 'deploy key' } });
    assert.notEqual(recalled.isError, true);
    assert.match(JSON.stringify(recalled.structuredContent), /rotates on Fridays/);
  });

  it('sends a notification to a log channel', async () => {
    const r = await client.callTool({ name: 'notify', arguments: { channel: 'log', message: 'hello' } });
    assert.notEqual(r.isError, true, JSON.stringify(r));
  });

  it('answers http_get to a host outside the whitelist with POLICY_DENIED as a tool error', async () => {
    const r = await client.callTool({ name: 'http_get', arguments: { url: 'https://example.com/' } });
    assert.equal(r.isError, true);
    const body = JSON.parse((r.content as { text: string }[])[0]!.text);
    assert.equal(body.code, 'POLICY_DENIED');
    assert.match(body.message, /\S/);
  });

  it('answers http_post to a host outside the whitelist with POLICY_DENIED as a tool error', async () => {
    const r = await client.callTool({
      name: 'http_post',
      arguments: { url: 'https://example.com/', body: 'x' },
    });
    assert.equal(r.isError, true);
    assert.equal(JSON.parse((r.content as { text: string }[])[0]!.text).code, 'POLICY_DENIED');
  });

  it('answers schema-invalid arguments with a tool error the model can read, naming the problem', async () => {
    const r = await client.callTool({ name: 'save_memory', arguments: { content: 'x', bogus: 1 } });
    assert.equal(r.isError, true);
    const body = JSON.parse((r.content as { text: string }[])[0]!.text);
    assert.equal(body.code, 'INVALID_ARGUMENT');
    assert.match(body.message, /bogus/);
    assert.deepEqual(body.problems, ['(arguments): unknown property "bogus"']);
  });

  it('reports progress while a long call runs, when the client asks for it', async () => {
    const seen: number[] = [];
    const r = await client.callTool(
      { name: 'run_command', arguments: { script: 'sleep 2.5; echo done', waitMs: 6000 } },
      { onprogress: (p: { progress: number }) => seen.push(p.progress), timeout: 30_000 },
    );
    assert.notEqual(r.isError, true, JSON.stringify(r));
    assert.ok(seen.length >= 2, `progress notifications: ${JSON.stringify(seen)}`);
    assert.deepEqual(
      seen,
      [...seen].sort((a, b) => a - b),
      'progress only increases',
    );
  });

  it('rejects an unknown tool with a JSON-RPC error', async () => {
    await assert.rejects(
      client.callTool({ name: 'no_such_tool', arguments: {} }),
      (e: Error & { code?: number }) => {
        assert.equal(e.code, -32602);
        assert.match(e.message, /Unknown tool/);
        return true;
      },
    );
  });
});
