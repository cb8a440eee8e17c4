import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { connectHttp, stdioTransport } from '../helpers/clients.js';
import {
  PADDOCK_BIN,
  runCli,
  type ServeProcess,
  startServe,
  type TempProject,
  tempProject,
} from '../helpers/paddock-process.js';
import { pollUntil } from '../helpers/poll.js';

type Answer = { action: 'accept' | 'decline' | 'cancel'; content?: Record<string, unknown> };

/** The official client over `paddock mcp` (stdio → bridge → socket), declaring form elicitation. */
async function elicitingClient(project: TempProject, answer: () => Promise<Answer>): Promise<Client> {
  const client = new Client(
    { name: 'approvals-test', version: '1.0.0' },
    { capabilities: { elicitation: { form: {} } } },
  );
  client.setRequestHandler('elicitation/create', async () => (await answer()) as never);
  await client.connect(stdioTransport(project));
  return client;
}

interface AuditJson {
  id: string;
  tool: string;
  success: boolean;
  errorCode: string | null;
  approvalId: string | null;
  approver: string | null;
  input: string;
}

async function auditRow(project: TempProject, marker: string): Promise<AuditJson> {
  const { stdout } = await runCli(project, ['audit', '--tool', 'save_memory', '--json']);
  const rows = stdout
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as AuditJson);
  const row = rows.find((r) => r.input.includes(marker));
  assert.ok(row, `an audit row for ${marker}: ${stdout}`);
  return row;
}

async function pendingApproval(
  project: TempProject,
  marker: string,
): Promise<{ id: string; arguments: string }> {
  const found = await pollUntil(
    async () => {
      const { stdout } = await runCli(project, ['approvals', 'list', '--json']);
      const list = JSON.parse(stdout || '[]') as { id: string; arguments: string; status: string }[];
      return list.find((a) => a.arguments.includes(marker) && a.status === 'pending');
    },
    `a pending approval for ${marker}`,
    30_000,
    100,
  );
  return found!;
}

function errorBody(result: unknown): { code: string; message: string } {
  const r = result as { isError?: boolean; content: { text: string }[] };
  assert.equal(r.isError, true, JSON.stringify(result));
  return JSON.parse(r.content[0]!.text) as { code: string; message: string };
}

describe('approvals decided in the CLI (approvals.mcp: gateway)', () => {
  let project: TempProject;
  let serve: ServeProcess;
  let client: Client;

  before(async () => {
    project = tempProject('permissions:\n  save_memory: ask\napprovals:\n  mcp: gateway\n');
    serve = await startServe(project);
    client = await connectHttp(serve.url, serve.token);
  });
  after(async () => {
    await client?.close().catch(() => {});
    await serve?.stop();
    project.cleanup();
  });

  it('an SDK client waits until `paddock approvals approve` runs its call; the audit row names approval and approver', async () => {
    const call = client.callTool({ name: 'save_memory', arguments: { content: 'approve-me-1' } });
    const approval = await pendingApproval(project, 'approve-me-1');
    const shown = await runCli(project, ['approvals', 'show', approval.id]);
    assert.match(shown.stdout, /save_memory/);
    assert.match(shown.stdout, /"content": "approve-me-1"/);
    const decided = await runCli(project, ['approvals', 'approve', approval.id]);
    assert.equal(decided.code, 0, decided.stderr);
    const result = (await call) as { isError?: boolean };
    assert.notEqual(result.isError, true, JSON.stringify(result));
    const row = await auditRow(project, 'approve-me-1');
    assert.equal(row.success, true);
    assert.equal(row.approvalId, approval.id);
    assert.equal(row.approver, 'cli');
    const again = await runCli(project, ['approvals', 'deny', approval.id]);
    assert.notEqual(again.code, 0);
    assert.match(again.stderr, /already approved/);
  });

  it('`paddock approvals deny --reason` refuses the call with PERMISSION_REQUIRED and the reason', async () => {
    const call = client.callTool({ name: 'save_memory', arguments: { content: 'deny-me-1' } });
    const approval = await pendingApproval(project, 'deny-me-1');
    const decided = await runCli(project, ['approvals', 'deny', approval.id, '--reason', 'not this note']);
    assert.equal(decided.code, 0, decided.stderr);
    const body = errorBody(await call);
    assert.equal(body.code, 'PERMISSION_REQUIRED');
    assert.match(body.message, /not this note/);
    const row = await auditRow(project, 'deny-me-1');
    assert.equal(row.success, false);
    assert.equal(row.approvalId, approval.id);
    assert.equal(row.approver, 'cli');
    const unknown = await runCli(project, ['approvals', 'approve', 'apr_unknown']);
    assert.notEqual(unknown.code, 0);
    assert.match(unknown.stderr, /No approval "apr_unknown"/);
  });

  it('a server killed while a call waits leaves the record, which the next start marks interrupted', async () => {
    const call = client
      .callTool({ name: 'save_memory', arguments: { content: 'crash-me-1' } })
      .catch((e: Error) => e);
    const approval = await pendingApproval(project, 'crash-me-1');
    await serve.stop('SIGKILL');
    assert.ok((await call) instanceof Error, 'the waiting call fails once its server is gone');
    serve = await startServe(project);
    const shown = await runCli(project, ['approvals', 'show', approval.id, '--json']);
    assert.equal((JSON.parse(shown.stdout) as { status: string }).status, 'interrupted');
    const late = await runCli(project, ['approvals', 'approve', approval.id]);
    assert.notEqual(late.code, 0);
    assert.match(late.stderr, /already interrupted/);
    await client.close().catch(() => {});
    client = await connectHttp(serve.url, serve.token);
  });
});

describe('approvals decided in the MCP client (elicitation)', () => {
  let project: TempProject;

  before(() => {
    project = tempProject('permissions:\n  save_memory: ask\napprovals:\n  timeoutSeconds: 5\n');
  });
  after(() => project.cleanup());

  it('a client that accepts the elicitation runs the tool; its person is the approver', async () => {
    const client = await elicitingClient(project, async () => ({
      action: 'accept',
      content: { decision: 'approve' },
    }));
    try {
      const result = (await client.callTool({
        name: 'save_memory',
        arguments: { content: 'elicit-yes' },
      })) as { isError?: boolean };
      assert.notEqual(result.isError, true, JSON.stringify(result));
      const row = await auditRow(project, 'elicit-yes');
      assert.equal(row.success, true);
      assert.match(row.approvalId ?? '', /^apr_/);
      assert.match(row.approver ?? '', /^mcp:/);
    } finally {
      await client.close();
    }
  });

  it('a client that declines gets PERMISSION_REQUIRED with the reason; one that answers "deny" gives its own', async () => {
    let answer: Answer = { action: 'decline' };
    const client = await elicitingClient(project, async () => answer);
    try {
      const declined = errorBody(
        await client.callTool({ name: 'save_memory', arguments: { content: 'elicit-no' } }),
      );
      assert.equal(declined.code, 'PERMISSION_REQUIRED');
      assert.match(declined.message, /declined in the MCP client/);
      answer = { action: 'accept', content: { decision: 'deny', reason: 'keep it out of memory' } };
      const denied = errorBody(
        await client.callTool({ name: 'save_memory', arguments: { content: 'elicit-no-2' } }),
      );
      assert.match(denied.message, /keep it out of memory/);
      const row = await auditRow(project, 'elicit-no');
      assert.equal(row.success, false);
      assert.match(row.approvalId ?? '', /^apr_/);
    } finally {
      await client.close();
    }
  });

  it('a remote client over Streamable HTTP is asked by elicitation too', async () => {
    // the server the stdio bridges of this project started (one per data directory)
    await (await elicitingClient(project, async () => ({ action: 'decline' }))).close();
    const status = JSON.parse((await runCli(project, ['status', '--json'])).stdout) as { url: string };
    const token = readFileSync(join(project.dataDir, 'token'), 'utf8').trim();
    const client = new Client(
      { name: 'approvals-http', version: '1.0.0' },
      { capabilities: { elicitation: { form: {} } } },
    );
    const asked: string[] = [];
    client.setRequestHandler('elicitation/create', async (request) => {
      asked.push(String((request.params as { message?: string }).message));
      return { action: 'accept', content: { decision: 'approve' } } as never;
    });
    try {
      await client.connect(
        new StreamableHTTPClientTransport(new URL(`${status.url}/mcp`), {
          requestInit: { headers: { authorization: `Bearer ${token}` } },
        }),
      );
      const result = (await client.callTool({
        name: 'save_memory',
        arguments: { content: 'elicit-http' },
      })) as {
        isError?: boolean;
      };
      assert.notEqual(result.isError, true, JSON.stringify(result));
      assert.equal(asked.length, 1);
      assert.match(asked[0] ?? '', /save_memory/);
      assert.match(asked[0] ?? '', /elicit-http/);
      assert.match((await auditRow(project, 'elicit-http')).approvalId ?? '', /^apr_/);
    } finally {
      await client.close().catch(() => {});
    }
  });

  it('an approval nobody answers expires, and the expiry is a denial', async () => {
    const client = await elicitingClient(project, () => new Promise<Answer>(() => {}));
    try {
      const body = errorBody(
        await client.callTool({ name: 'save_memory', arguments: { content: 'elicit-late' } }),
      );
      assert.equal(body.code, 'PERMISSION_REQUIRED');
      assert.match(body.message, /expired/);
      const row = await auditRow(project, 'elicit-late');
      assert.equal(row.success, false);
      assert.equal(row.approver, null);
      const shown = await runCli(project, ['approvals', 'show', row.approvalId!, '--json']);
      assert.equal((JSON.parse(shown.stdout) as { status: string }).status, 'expired');
    } finally {
      await client.close();
    }
  });

  it('a client without elicitation and no dock page open confirms by itself, as before', async () => {
    const client = new Client({ name: 'plain', version: '1.0.0' });
    await client.connect(
      new StdioClientTransport({
        command: process.execPath,
        args: [PADDOCK_BIN, 'mcp'],
        cwd: project.dir,
        env: project.env as Record<string, string>,
        stderr: 'ignore',
      }),
    );
    try {
      const result = (await client.callTool({ name: 'save_memory', arguments: { content: 'plain-1' } })) as {
        isError?: boolean;
      };
      assert.notEqual(result.isError, true);
      assert.equal((await auditRow(project, 'plain-1')).approvalId, null);
    } finally {
      await client.close();
    }
  });
});
