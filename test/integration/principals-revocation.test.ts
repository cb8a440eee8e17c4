/**
 * What a revocation ends and who decides a third party's approvals, against a real `paddock
 * serve` with real OAuth clients: `paddock clients revoke` ends the client's sessions, its
 * running job (cancelled; its tool channel refuses at once) and its computers before it
 * returns, and says so in an audit row; a client never approves its own `ask` call, and one
 * nobody decides is denied at its expiry, recorded.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { connectHttp } from '../helpers/clients.js';
import { grantTokens, paddockClientId } from '../helpers/oauth.js';
import {
  runCli,
  type ServeProcess,
  startServe,
  type TempProject,
  tempProject,
} from '../helpers/paddock-process.js';
import { pollUntil } from '../helpers/poll.js';

type Structured = Record<string, unknown>;

async function call(client: Client, name: string, args: Structured): Promise<Structured> {
  const r = await client.callTool({ name, arguments: args });
  const text = (r.content as { text?: string }[] | undefined)?.[0]?.text;
  const body = (r.structuredContent ?? (text ? JSON.parse(text) : {})) as Structured;
  return r.isError ? { error: body } : body;
}

interface Row {
  seq: number;
  tool: string;
  caller: string;
  principal: string | null;
  input: string;
  success: boolean;
  jobId: string | null;
  approvalId: string | null;
  approver: string | null;
  errorCode: string | null;
}

async function rows(project: TempProject, args: string[]): Promise<Row[]> {
  const res = await runCli(project, ['audit', '--json', '--limit', '10000', ...args]);
  assert.equal(res.code, 0, res.stderr);
  return res.stdout
    .trim()
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as Row);
}

describe('revoking a client ends everything of it', () => {
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

  it('paddock clients revoke cancels its job, refuses its channel, closes its sessions, stops its computer, with an audit row', async () => {
    const owner = await connectHttp(serve.url, serve.token, 'owner', { computer: 'shared-box' });
    open.push(owner);
    await call(owner, 'launch_computer', { profileId: 'shell' });
    const { clientId, tokens } = await grantTokens(serve, {
      scope: 'tools computer computer:shared-box',
      name: 'Revoked Worker',
    });
    const id = await paddockClientId(project, clientId);
    const onShared = await connectHttp(serve.url, tokens.access_token, 'worker', { computer: 'shared-box' });
    const ownBox = await connectHttp(serve.url, tokens.access_token, 'worker');
    open.push(onShared, ownBox);
    const own = await call(ownBox, 'launch_computer', { profileId: 'shell' });
    assert.equal(own.error, undefined, JSON.stringify(own));
    // a script that keeps calling tools as the client, far past the revocation if nothing ends it
    const job = await call(onShared, 'run_command', {
      script:
        'i=0; while [ $i -lt 2000 ]; do i=$((i+1)); paddock-tool call recall_memory "{\\"query\\":\\"loop-$i\\"}" >/dev/null || echo "refused at $i" >&2; sleep 0.05; done',
      waitMs: 0,
      timeoutMs: 300_000,
    });
    const jobId = String(job.jobId);
    await pollUntil(
      async () =>
        (await rows(project, ['--principal', `client:${id}`, '--tool', 'recall_memory'])).length >= 3,
      'the job to call tools as the client',
      30_000,
      100,
    );

    const revoked = await runCli(project, ['clients', 'revoke', id, '--json']);
    assert.equal(revoked.code, 0, revoked.stderr);
    const ended = JSON.parse(revoked.stdout) as {
      sessions: number;
      jobs: { jobId: string; status: string }[];
      channels: number;
      computers: string[];
    };
    assert.ok(ended.sessions >= 2, revoked.stdout);
    assert.deepEqual(
      ended.jobs.map((j) => j.jobId),
      [jobId],
    );
    assert.ok(['cancelled', 'cancelling'].includes(ended.jobs[0]!.status), revoked.stdout);
    assert.equal(ended.channels, 1);
    assert.equal(ended.computers.length, 1, 'its own computer');

    // at once, as the command returned: the job is cancelled, as the owner sees it
    const seen = await call(owner, 'read_job', { jobId, byteLimit: 65536 });
    assert.equal(seen.canceled, true, JSON.stringify(seen));
    // the audit row says what was ended, and no tool call of the job ran after it
    const revokeRow = (await rows(project, ['--tool', 'clients.revoke'])).at(-1);
    assert.ok(revokeRow);
    assert.equal(revokeRow.caller, 'cli');
    assert.equal(revokeRow.principal, 'owner');
    assert.match(revokeRow.input, new RegExp(jobId.replace('.', '\\.')));
    const ofJob = (await rows(project, ['--principal', `client:${id}`])).filter((r) => r.jobId === jobId);
    assert.ok(ofJob.length >= 3);
    const late = ofJob.filter((r) => r.seq > revokeRow.seq && r.success);
    assert.deepEqual(late, [], 'no call of the job succeeded after the revocation');
    // its sessions are gone and its computer stopped
    await assert.rejects(call(onShared, 'get_computer_status', {}));
    const computers = await runCli(project, ['computers', 'list', '--json']);
    const list = (JSON.parse(computers.stdout) as { computers: { name: string; running: boolean }[] })
      .computers;
    assert.ok(!list.some((c) => c.name === ended.computers[0] && c.running), computers.stdout);
    assert.ok(
      list.some((c) => c.name === 'named:shared-box' && c.running),
      'the owner’s computer runs on',
    );
  });
});

describe('approvals of a third party', () => {
  let project: TempProject;
  let serve: ServeProcess;

  before(async () => {
    project = tempProject('permissions:\n  save_memory: ask\napprovals:\n  timeoutSeconds: 5\n');
    serve = await startServe(project);
  });
  after(async () => {
    await serve?.stop();
    project?.cleanup();
  });

  it('a client answering approve to the elicitation of its own call does not approve it: the CLI decides', async () => {
    const { tokens } = await grantTokens(serve, { scope: 'tools' });
    const asked: string[] = [];
    const client = new Client(
      { name: 'self-approver', version: '1.0.0' },
      { capabilities: { elicitation: { form: {} } } },
    );
    client.setRequestHandler('elicitation/create', async (request) => {
      asked.push((request.params as { message: string }).message);
      return { action: 'accept', content: { decision: 'approve' } } as never;
    });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(`${serve.url}/mcp`), {
        requestInit: { headers: { authorization: `Bearer ${tokens.access_token}` } },
      }),
    );
    try {
      const pending = client.callTool({ name: 'save_memory', arguments: { content: 'self-approve-marker' } });
      await pollUntil(() => asked.length > 0, 'the notice in the client', 10_000);
      assert.match(asked[0] ?? '', /waits for the owner's approval/);
      assert.match(asked[0] ?? '', /nothing answered here approves or denies it/);
      const list = JSON.parse((await runCli(project, ['approvals', 'list', '--json'])).stdout) as {
        id: string;
        status: string;
        arguments: string;
      }[];
      const approval = list.find((a) => a.arguments.includes('self-approve-marker'));
      assert.equal(approval?.status, 'pending', 'its own "approve" decided nothing');
      const denied = await runCli(project, [
        'approvals',
        'deny',
        approval!.id,
        '--reason',
        'not yours to approve',
      ]);
      assert.equal(denied.code, 0, denied.stderr);
      const result = (await pending) as { isError?: boolean; content: { text: string }[] };
      assert.equal(result.isError, true);
      assert.match(result.content[0]!.text, /not yours to approve/);
      const row = (await rows(project, ['--tool', 'save_memory'])).find((r) =>
        r.input.includes('self-approve-marker'),
      );
      assert.equal(row?.approver, 'cli');
      assert.equal(row?.success, false);
    } finally {
      await client.close();
    }
  });

  it('revoking a client whose call waits for approval ends the wait: the approval is cancelled and the row written', async () => {
    const { clientId, tokens } = await grantTokens(serve, { scope: 'tools' });
    const id = await paddockClientId(project, clientId);
    const client = await connectHttp(serve.url, tokens.access_token, 'waiting');
    const pending = call(client, 'save_memory', { content: 'revoked-while-waiting' }).catch((e: unknown) => ({
      rejected: String(e),
    }));
    const approval = await pollUntil(
      async () => {
        const list = JSON.parse((await runCli(project, ['approvals', 'list', '--json'])).stdout) as {
          id: string;
          arguments: string;
        }[];
        return list.find((a) => a.arguments.includes('revoked-while-waiting'));
      },
      'the waiting approval',
      10_000,
      100,
    );
    const revoked = await runCli(project, ['clients', 'revoke', id]);
    assert.equal(revoked.code, 0, revoked.stderr);
    await pending;
    const ended = await pollUntil(
      async () => {
        const list = JSON.parse((await runCli(project, ['approvals', 'list', '--all', '--json'])).stdout) as {
          id: string;
          status: string;
        }[];
        const a = list.find((x) => x.id === approval?.id);
        return a && a.status !== 'pending' ? a : null;
      },
      'the approval to end',
      10_000,
      100,
    );
    assert.equal(ended?.status, 'cancelled');
    const row = (await rows(project, ['--tool', 'save_memory'])).find((r) =>
      r.input.includes('revoked-while-waiting'),
    );
    assert.equal(row?.success, false, 'the call never ran, and its row says so');
    await client.close().catch(() => undefined);
  });

  it('a client without elicitation and no dock page open waits, then is denied at expiry; the denial is recorded', async () => {
    const { tokens } = await grantTokens(serve, { scope: 'tools' });
    const client = await connectHttp(serve.url, tokens.access_token, 'no-elicitation');
    try {
      const result = await call(client, 'save_memory', { content: 'unattended-marker' });
      const error = result.error as Structured;
      assert.equal(error?.code, 'PERMISSION_REQUIRED', JSON.stringify(result));
      assert.match(String(error.message), /expired/);
      const row = (await rows(project, ['--tool', 'save_memory'])).find((r) =>
        r.input.includes('unattended-marker'),
      );
      assert.ok(row?.approvalId, 'the row names the approval');
      assert.equal(row?.success, false);
      const list = JSON.parse((await runCli(project, ['approvals', 'list', '--all', '--json'])).stdout) as {
        id: string;
        status: string;
      }[];
      assert.equal(list.find((a) => a.id === row?.approvalId)?.status, 'expired');
    } finally {
      await client.close();
    }
  });
});
