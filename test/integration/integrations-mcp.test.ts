import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { pathToFileURL } from 'node:url';
import type { Client } from '@modelcontextprotocol/client';
import { startEverythingHttp } from '../fixtures/mcp/everything-http.js';
import { packageBin } from '../fixtures/mcp/harness.js';
import { connectStdio } from '../helpers/clients.js';
import { REPO_ROOT, runCli, type TempProject, tempProject } from '../helpers/paddock-process.js';

// What `import { defineTool, z } from 'paddock/plugin'` resolves to in an installed package.
const PLUGIN = `import { defineTool, z } from '${pathToFileURL(join(REPO_ROOT, 'dist', 'src', 'plugin.js')).href}';
export const greet = defineTool({
  name: 'greet',
  description: 'Greets someone by name.',
  input: z.object({ name: z.string().max(20) }),
  output: z.object({ greeting: z.string() }),
  execute: async ({ name }) => ({ greeting: 'hello ' + name }),
});
`;

const BROKEN_PLUGIN = `throw new Error('this plugin is broken on purpose');\n`;

function text(r: unknown): string {
  return ((r as { content: { text: string }[] }).content[0]?.text ?? '') as string;
}

describe('upstream MCP servers and plugins through paddock mcp (end to end)', () => {
  let project: TempProject;
  let client: Client;
  let remote: Awaited<ReturnType<typeof startEverythingHttp>>;

  before(async () => {
    remote = await startEverythingHttp();
    project = tempProject('permissions:\n  "everything_get_sum": deny\n');
    const work = join(project.dir, 'work');
    mkdirSync(join(project.dir, '.paddock', 'plugins'), { recursive: true });
    mkdirSync(work);
    writeFileSync(join(work, 'hello.txt'), 'hello from the filesystem server');
    writeFileSync(
      join(project.dir, '.paddock', 'mcp_servers.yaml'),
      `mcpServers:
  everything:
    command: ${process.execPath}
    args: ["${packageBin('@modelcontextprotocol/server-everything')}"]
    startup: eager
  remote:
    type: http
    url: \${REMOTE_URL}
    startup: eager
  filesystem:
    command: ${process.execPath}
    args: ["${packageBin('@modelcontextprotocol/server-filesystem')}", "\${WORKDIR}"]
    startup: eager
    permissions:
      "read_*": auto
`,
    );
    writeFileSync(join(project.dir, '.paddock', 'plugins', 'greet.mjs'), PLUGIN);
    writeFileSync(join(project.dir, '.paddock', 'plugins', 'broken.mjs'), BROKEN_PLUGIN);
    project.env.WORKDIR = work;
    project.env.REMOTE_URL = remote.url;
    client = await connectStdio(project);
  });

  after(async () => {
    await client?.close();
    await remote?.stop();
    project?.cleanup();
  });

  async function toolNames(): Promise<string[]> {
    const deadline = Date.now() + 30_000;
    for (;;) {
      const names = (await client.listTools()).tools.map((t) => t.name);
      if (
        names.includes('everything_echo') &&
        names.includes('remote_echo') &&
        names.some((n) => n.startsWith('filesystem_'))
      )
        return names;
      if (Date.now() > deadline) throw new Error(`upstream tools never appeared: ${names.join(', ')}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  it('lists upstream tools as <server>_<tool> beside built-ins and plugin tools, hiding denied ones', async () => {
    const names = await toolNames();
    assert.ok(names.includes('filesystem_read_text_file'), names.join(','));
    assert.ok(names.includes('greet'));
    assert.ok(names.includes('save_memory'));
    assert.ok(!names.includes('everything_get_sum'), 'a denied tool must not be listed');
  });

  it('calls upstream tools and the plugin through the gateway', async () => {
    await toolNames();
    const echo = await client.callTool({ name: 'everything_echo', arguments: { message: 'ping-42' } });
    assert.notEqual(echo.isError, true, JSON.stringify(echo));
    assert.match(JSON.stringify(echo.content), /ping-42/);
    const file = await client.callTool({
      name: 'filesystem_read_text_file',
      arguments: { path: join(project.dir, 'work', 'hello.txt') },
    });
    assert.notEqual(file.isError, true, JSON.stringify(file));
    assert.match(JSON.stringify(file), /hello from the filesystem server/);
    const overHttp = await client.callTool({
      name: 'remote_echo',
      arguments: { message: 'via-streamable-http' },
    });
    assert.notEqual(overHttp.isError, true, JSON.stringify(overHttp));
    assert.match(JSON.stringify(overHttp.content), /via-streamable-http/);
    const greet = await client.callTool({ name: 'greet', arguments: { name: 'Ada' } });
    assert.deepEqual(greet.structuredContent, { greeting: 'hello Ada' });
  });

  it('rejects schema-invalid arguments before they reach the upstream server', async () => {
    await toolNames();
    const r = await client.callTool({ name: 'everything_echo', arguments: { nope: 1 } });
    assert.equal(r.isError, true);
    const body = JSON.parse(text(r));
    assert.equal(body.code, 'INVALID_ARGUMENT');
    assert.match(body.message, /message|nope/);
  });

  it('refuses a denied upstream tool with POLICY_DENIED', async () => {
    await toolNames();
    const r = await client.callTool({ name: 'everything_get_sum', arguments: { a: 1, b: 2 } });
    assert.equal(r.isError, true);
    assert.equal(JSON.parse(text(r)).code, 'POLICY_DENIED');
  });

  it('records every call with its source, and reports the broken plugin without stopping the rest', async () => {
    await toolNames();
    const audit = await runCli(project, ['audit', '--json', '--limit', '1000']);
    assert.equal(audit.code, 0, audit.stderr);
    const rows = audit.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { tool: string; source: string; success: boolean });
    assert.ok(rows.some((r) => r.tool === 'everything_echo' && r.source === 'mcp:everything' && r.success));
    assert.ok(rows.some((r) => r.tool === 'filesystem_read_text_file' && r.source === 'mcp:filesystem'));
    assert.ok(rows.some((r) => r.tool === 'greet' && r.source === 'plugin:greet'));
    assert.ok(rows.some((r) => r.tool === 'remote_echo' && r.source === 'mcp:remote' && r.success));
    const list = await runCli(project, ['servers', 'list', '--json']);
    assert.equal(list.code, 0, list.stderr);
    const status = JSON.parse(list.stdout) as {
      plugins: { module: string; state: string; error: string | null }[];
    };
    const broken = status.plugins.find((p) => p.module === 'broken');
    assert.equal(broken?.state, 'failed');
    assert.match(broken?.error ?? '', /broken on purpose/);
  });

  it('runs an ask upstream tool for the MCP client but refuses it to a command’s tool channel', async () => {
    await toolNames();
    const direct = await client.callTool({ name: 'everything_echo', arguments: { message: 'asked' } });
    assert.notEqual(direct.isError, true);
    const job = await client.callTool({
      name: 'run_command',
      arguments: {
        script: `paddock-tool list | grep -c everything_echo; paddock-tool call everything_echo '{"message":"x"}'; echo "exit=$?"`,
        waitMs: 10_000,
      },
    });
    const out = job.structuredContent as { stdout: string; stderr: string };
    assert.match(out.stdout, /^0\n/, 'an ask tool is not listed to the channel');
    assert.match(out.stdout, /exit=1/);
    assert.match(out.stderr, /PERMISSION_REQUIRED/);
  });

  it('ends an upstream call that runs past the caller’s deadline with UPSTREAM_ERROR and an audit row', async () => {
    const r = await runCli(project, [
      'tools',
      'call',
      'everything_trigger_long_running_operation',
      '{"duration":30,"steps":5}',
      '--timeout-ms',
      '1500',
    ]);
    assert.equal(r.code, 1);
    const error = JSON.parse(r.stderr.trim().split('\n').at(-1)!) as { code: string; message: string };
    assert.equal(error.code, 'UPSTREAM_ERROR');
    // The CLI starts the server itself: on a slow machine the deadline passes while it starts.
    assert.match(error.message, /cancellation|did not become ready before the call's deadline/);
    const audit = await runCli(project, [
      'audit',
      '--json',
      '--tool',
      'everything_trigger_long_running_operation',
    ]);
    assert.match(audit.stdout, /"errorCode":"UPSTREAM_ERROR"/);
  });

  it('shows permissions from mcp_servers.yaml and paddock.yaml in tools list', async () => {
    const r = await runCli(project, ['tools', 'list', '--json']);
    assert.equal(r.code, 0, r.stderr);
    const tools = JSON.parse(r.stdout) as { name: string; permission: string }[];
    assert.equal(tools.find((t) => t.name === 'filesystem_read_text_file')?.permission, 'auto');
    assert.equal(tools.find((t) => t.name === 'everything_echo')?.permission, 'ask');
    assert.equal(
      tools.find((t) => t.name === 'everything_get_sum'),
      undefined,
    );
  });
});
