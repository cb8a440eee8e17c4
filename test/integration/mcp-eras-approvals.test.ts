/**
 * Approvals of 2026-07-28 clients: an `ask` call that waits for a person reaches the client as
 * `input_required` (the 2026 form of elicitation) and continues when the client retries with
 * the answer; it is the same approval record and the same audit row as a 2025 call's. A client
 * that declared no elicitation waits for the dock or the CLI, as before. A forged answer
 * decides nothing.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { clientOptions } from '../helpers/clients.js';
import {
  runCli,
  type ServeProcess,
  startServe,
  type TempProject,
  tempProject,
} from '../helpers/paddock-process.js';
import { pollUntil } from '../helpers/poll.js';

type Answer = { action: 'accept' | 'decline' | 'cancel'; content?: Record<string, unknown> };

interface AuditJson {
  success: boolean;
  input: string;
  caller: string;
  approvalId: string | null;
  approver: string | null;
  errorCode: string | null;
}

async function auditRow(project: TempProject, marker: string): Promise<AuditJson> {
  const { stdout } = await runCli(project, ['audit', '--tool', 'save_memory', '--json']);
  const row = stdout
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as AuditJson)
    .find((r) => r.input.includes(marker));
  assert.ok(row, `an audit row for ${marker}: ${stdout}`);
  return row;
}

function errorBody(result: unknown): { code: string; message: string } {
  const r = result as { isError?: boolean; content: { text: string }[] };
  assert.equal(r.isError, true, JSON.stringify(result));
  return JSON.parse(r.content[0]!.text) as { code: string; message: string };
}

describe('approvals of 2026-07-28 clients (input_required)', () => {
  let project: TempProject;
  let serve: ServeProcess;
  const open: Client[] = [];

  /** A 2026 client over HTTP; `answer` set: it declared form elicitation and answers so. */
  const modern = async (answer?: (message: string) => Answer): Promise<Client> => {
    const client = new Client(
      { name: 'modern-approvals', version: '1.0.0' },
      clientOptions('modern', answer ? { elicitation: { form: {} } } : undefined) as never,
    );
    if (answer)
      client.setRequestHandler('elicitation/create', async (request) => {
        const params = request.params as { message: string };
        return answer(params.message) as never;
      });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(`${serve.url}/mcp`), {
        requestInit: { headers: { authorization: `Bearer ${serve.token}` } },
      }),
    );
    assert.equal(client.getProtocolEra(), 'modern');
    open.push(client);
    return client;
  };

  before(async () => {
    project = tempProject('permissions:\n  save_memory: ask\napprovals:\n  mcp: gateway\n');
    serve = await startServe(project);
  });
  after(async () => {
    await Promise.all(open.map((c) => c.close().catch(() => {})));
    await serve?.stop();
    project?.cleanup();
  });

  it('the person approves in the client: the call runs once, and the audit row names the approval and the client', async () => {
    const asked: string[] = [];
    const client = await modern((message) => {
      asked.push(message);
      return { action: 'accept', content: { decision: 'approve' } };
    });
    const result = (await client.callTool({ name: 'save_memory', arguments: { content: 'mrtr-yes-1' } })) as {
      isError?: boolean;
    };
    assert.notEqual(result.isError, true, JSON.stringify(result));
    assert.equal(asked.length, 1, 'asked once');
    assert.match(asked[0]!, /save_memory/);
    assert.match(asked[0]!, /mrtr-yes-1/);
    const row = await auditRow(project, 'mrtr-yes-1');
    assert.equal(row.success, true);
    assert.ok(row.approvalId, 'the row names the approval');
    assert.equal(row.approver, 'mcp:owner');
    const shown = await runCli(project, ['approvals', 'show', row.approvalId!, '--json']);
    const approval = JSON.parse(shown.stdout) as { status: string; decidedVia: string };
    assert.equal(approval.status, 'approved');
    assert.equal(approval.decidedVia, 'elicitation');
  });

  it('the person denies with a reason: PERMISSION_REQUIRED with the reason, one failed audit row', async () => {
    const client = await modern(() => ({
      action: 'accept',
      content: { decision: 'deny', reason: 'not now' },
    }));
    const body = errorBody(
      await client.callTool({ name: 'save_memory', arguments: { content: 'mrtr-no-1' } }),
    );
    assert.equal(body.code, 'PERMISSION_REQUIRED');
    assert.match(body.message, /not now/);
    const row = await auditRow(project, 'mrtr-no-1');
    assert.equal(row.success, false);
    assert.ok(row.approvalId);
  });

  it('a 2026 client without elicitation waits until `paddock approvals approve` decides', async () => {
    const client = await modern();
    const call = client.callTool({ name: 'save_memory', arguments: { content: 'mrtr-cli-1' } });
    const pending = await pollUntil(
      async () => {
        const { stdout } = await runCli(project, ['approvals', 'list', '--json']);
        const list = JSON.parse(stdout || '[]') as { id: string; arguments: string; status: string }[];
        return list.find((a) => a.arguments.includes('mrtr-cli-1') && a.status === 'pending');
      },
      'a pending approval',
      30_000,
      100,
    );
    const decided = await runCli(project, ['approvals', 'approve', pending!.id]);
    assert.equal(decided.code, 0, decided.stderr);
    const result = (await call) as { isError?: boolean };
    assert.notEqual(result.isError, true, JSON.stringify(result));
    assert.equal((await auditRow(project, 'mrtr-cli-1')).approver, 'cli');
  });

  it('an answer with a forged or replayed requestState decides nothing', async () => {
    const envelope = {
      'io.modelcontextprotocol/protocolVersion': '2026-07-28',
      'io.modelcontextprotocol/clientInfo': { name: 'forger', version: '1' },
      'io.modelcontextprotocol/clientCapabilities': { elicitation: { form: {} } },
    };
    const send = async (params: Record<string, unknown>) => {
      const res = await fetch(`${serve.url}/mcp`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${serve.token}`,
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          'mcp-protocol-version': '2026-07-28',
          'mcp-method': 'tools/call',
          'mcp-name': 'save_memory',
        },
        body: JSON.stringify({
          jsonrpc: '2.0',
          id: 7,
          method: 'tools/call',
          params: { ...params, _meta: envelope },
        }),
      });
      return (await res.json()) as { result?: Record<string, unknown>; error?: { code: number } };
    };
    const first = await send({ name: 'save_memory', arguments: { content: 'mrtr-forge-1' } });
    assert.equal(first.result?.resultType, 'input_required', JSON.stringify(first));
    const state = first.result?.requestState as string;
    const key = Object.keys(first.result?.inputRequests as object)[0]!;
    const approve = { [key]: { action: 'accept', content: { decision: 'approve' } } };
    const forged = await send({
      name: 'save_memory',
      arguments: { content: 'mrtr-forge-1' },
      inputResponses: approve,
      requestState: `${state.slice(0, -4)}AAAA`,
    });
    assert.equal(forged.error?.code, -32602, JSON.stringify(forged));
    const other = await send({
      name: 'save_memory',
      arguments: { content: 'mrtr-forge-OTHER' },
      inputResponses: approve,
      requestState: state,
    });
    assert.match(
      JSON.stringify(other.result),
      /NOT_FOUND/,
      'the state does not carry over to other arguments',
    );
    const pending = await runCli(project, ['approvals', 'list', '--json']);
    const waiting = (JSON.parse(pending.stdout) as { arguments: string; status: string }[]).find((a) =>
      a.arguments.includes('mrtr-forge-1'),
    );
    assert.equal(waiting?.status, 'pending', 'still undecided');
  });
});
