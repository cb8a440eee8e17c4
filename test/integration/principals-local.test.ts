/**
 * The owner on the host is whoever runs as the server's uid: the stdio bridge (`paddock mcp`)
 * and the CLI reach the server's socket and act as the owner (every computer, the owner's
 * memories, revocations); another local uid reaches neither the socket nor the store, so it can
 * neither act as the owner nor revoke a client. Real processes; the other uid is 65534 (nobody).
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Client } from '@modelcontextprotocol/client';
import { connectHttp, connectStdio } from '../helpers/clients.js';
import { grantTokens, paddockClientId } from '../helpers/oauth.js';
import {
  PADDOCK_BIN,
  runCli,
  type ServeProcess,
  startServe,
  type TempProject,
  tempProject,
} from '../helpers/paddock-process.js';

const ROOT = process.getuid?.() === 0;

/** Runs `argv` as uid/gid 65534 with the project's environment; its exit code and output. */
function asNobody(project: TempProject, argv: string[]): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(
      'setpriv',
      ['--reuid=65534', '--regid=65534', '--clear-groups', process.execPath, ...argv],
      { cwd: '/', env: project.env, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let out = '';
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
    });
    child.stderr.on('data', (d: Buffer) => {
      out += d.toString();
    });
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, out }));
  });
}

async function call(
  client: Client,
  name: string,
  args: Record<string, unknown>,
): Promise<Record<string, unknown>> {
  const r = await client.callTool({ name, arguments: args });
  const text = (r.content as { text?: string }[] | undefined)?.[0]?.text;
  const body = (r.structuredContent ?? (text ? JSON.parse(text) : {})) as Record<string, unknown>;
  return r.isError ? { error: body } : body;
}

describe('the owner on the host is the server’s uid', { skip: !ROOT && 'needs root to switch uid' }, () => {
  let project: TempProject;
  let serve: ServeProcess;
  const open: Client[] = [];

  before(async () => {
    project = tempProject('computer:\n  defaultProfile: shell\n');
    serve = await startServe(project);
  });
  after(async () => {
    for (const c of open) await c.close().catch(() => undefined);
    await serve?.stop();
    project?.cleanup();
  });

  it('the stdio bridge acts as the owner: a named computer and the owner’s memories, as before', async () => {
    const bridge = await connectStdio(project, 'local-owner', ['--computer', 'review-box']);
    open.push(bridge);
    await call(bridge, 'launch_computer', { profileId: 'shell' });
    const written = await call(bridge, 'write_file', {
      path: '/workspace/local.txt',
      content: 'written-by-the-owner',
      overwrite: true,
    });
    assert.equal(written.error, undefined, JSON.stringify(written));
    const saved = await call(bridge, 'save_memory', { content: 'local owner note' });
    assert.equal(saved.namespace, 'mcp');
    const rows = await runCli(project, ['audit', '--json', '--tool', 'save_memory']);
    const row = JSON.parse(rows.stdout.trim().split('\n').at(-1)!) as { principal: string; caller: string };
    assert.equal(row.principal, 'owner');
    assert.match(row.caller, /^mcp:[0-9a-f-]{36}$/);
    const cli = await runCli(project, ['tools', 'call', 'recall_memory', '{"query":"cli-local-marker"}']);
    assert.equal(cli.code, 0, cli.stderr);
    const cliRow = (await runCli(project, ['audit', '--json', '--caller', 'cli'])).stdout
      .trim()
      .split('\n')
      .at(-1);
    assert.equal(
      (JSON.parse(cliRow!) as { principal: string }).principal,
      'owner',
      'the CLI of the same uid is the owner',
    );
  });

  it('another local uid reaches neither the socket nor the store: it cannot revoke a client or act as the owner', async () => {
    const { clientId, tokens } = await grantTokens(serve, { scope: 'tools' });
    const id = await paddockClientId(project, clientId);
    const socket = join(project.dataDir, 'run', 'paddock.sock');
    const knock = await asNobody(project, [
      '-e',
      `require('node:net').connect(${JSON.stringify(socket)}).on('error', (e) => { console.log(e.code); process.exit(3); }).on('connect', () => process.exit(0));`,
    ]);
    assert.equal(knock.code, 3, knock.out);
    assert.match(knock.out, /EACCES|ENOENT/);
    const revoke = await asNobody(project, [PADDOCK_BIN, 'clients', 'revoke', id]);
    assert.notEqual(revoke.code, 0, revoke.out);
    const acting = await asNobody(project, [
      PADDOCK_BIN,
      'tools',
      'call',
      'recall_memory',
      '{"query":"local owner note"}',
    ]);
    assert.notEqual(acting.code, 0, acting.out);
    assert.doesNotMatch(acting.out, /local owner note/);
    // the client is still approved: nothing the other uid did reached the server
    const client = await connectHttp(serve.url, tokens.access_token, 'still-approved');
    open.push(client);
    const recalled = await call(client, 'recall_memory', { query: 'anything' });
    assert.equal(recalled.error, undefined, JSON.stringify(recalled));
  });
});
