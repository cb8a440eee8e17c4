/**
 * The tasks extension (io.modelcontextprotocol/tasks) for 2026-07-28 clients that declare it:
 * an `ask` call that waits for a person, or a call still running after a moment, answers with a
 * task; the client polls `tasks/get`, answers the approval with `tasks/update`, and may cancel
 * with `tasks/cancel`. The call is one gateway call with one audit row, whatever the task does.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import {
  runCli,
  type ServeProcess,
  startServe,
  type TempProject,
  tempProject,
} from '../helpers/paddock-process.js';
import { pollUntil } from '../helpers/poll.js';

const TASKS = 'io.modelcontextprotocol/tasks';
const ENVELOPE = {
  'io.modelcontextprotocol/protocolVersion': '2026-07-28',
  'io.modelcontextprotocol/clientInfo': { name: 'tasks-test', version: '1' },
  'io.modelcontextprotocol/clientCapabilities': { elicitation: { form: {} }, extensions: { [TASKS]: {} } },
};

type Reply = { result?: Record<string, unknown>; error?: { code: number; message: string } };

describe('tasks for 2026-07-28 clients that declare the extension', () => {
  let project: TempProject;
  let serve: ServeProcess;
  let id = 1;

  const send = async (method: string, params: Record<string, unknown>, name?: string): Promise<Reply> => {
    const res = await fetch(`${serve.url}/mcp`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${serve.token}`,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'mcp-protocol-version': '2026-07-28',
        'mcp-method': method,
        ...(name ? { 'mcp-name': name } : {}),
      },
      body: JSON.stringify({ jsonrpc: '2.0', id: id++, method, params: { ...params, _meta: ENVELOPE } }),
    });
    const text = await res.text();
    return JSON.parse(text) as Reply;
  };
  const get = (taskId: string) => send('tasks/get', { taskId }, taskId);

  before(async () => {
    project = tempProject('permissions:\n  save_memory: ask\napprovals:\n  mcp: gateway\n');
    serve = await startServe(project);
  });
  after(async () => {
    await serve?.stop();
    project?.cleanup();
  });

  it('an ask call becomes a task waiting for input; tasks/update approves it and tasks/get returns its result', async () => {
    const created = await send(
      'tools/call',
      { name: 'save_memory', arguments: { content: 'task-approve-1' } },
      'save_memory',
    );
    assert.equal(created.result?.resultType, 'task', JSON.stringify(created));
    const taskId = created.result?.taskId as string;
    assert.equal(created.result?.status, 'input_required');
    const waiting = await get(taskId);
    assert.equal(waiting.result?.status, 'input_required', JSON.stringify(waiting));
    const requests = waiting.result?.inputRequests as Record<
      string,
      { method: string; params: { message: string } }
    >;
    const [key, request] = Object.entries(requests)[0]!;
    assert.equal(request.method, 'elicitation/create');
    assert.match(request.params.message, /task-approve-1/);
    const ack = await send(
      'tasks/update',
      { taskId, inputResponses: { [key]: { action: 'accept', content: { decision: 'approve' } } } },
      taskId,
    );
    assert.deepEqual(
      Object.keys(ack.result ?? {}).filter((k) => k !== '_meta' && k !== 'resultType'),
      [],
    );
    const done = await pollUntil(
      async () => {
        const r = await get(taskId);
        return r.result?.status === 'completed' ? r : undefined;
      },
      'the task completed',
      30_000,
      100,
    );
    const result = done!.result?.result as { isError?: boolean; structuredContent?: Record<string, unknown> };
    assert.notEqual(result.isError, true, JSON.stringify(result));
    const { stdout } = await runCli(project, ['audit', '--tool', 'save_memory', '--json']);
    const rows = stdout
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as { input: string; success: boolean; approver: string | null });
    const mine = rows.filter((r) => r.input.includes('task-approve-1'));
    assert.equal(mine.length, 1, 'one audit row for the whole task');
    assert.equal(mine[0]!.success, true);
    assert.equal(mine[0]!.approver, 'mcp:owner');
  });

  it('tasks/cancel ends a waiting task as cancelled, and its approval is no longer pending', async () => {
    const created = await send(
      'tools/call',
      { name: 'save_memory', arguments: { content: 'task-cancel-1' } },
      'save_memory',
    );
    const taskId = created.result?.taskId as string;
    assert.ok(taskId, JSON.stringify(created));
    await send('tasks/cancel', { taskId }, taskId);
    const ended = await pollUntil(
      async () => {
        const r = await get(taskId);
        return r.result?.status === 'cancelled' ? r : undefined;
      },
      'the task cancelled',
      30_000,
      100,
    );
    assert.ok(ended);
    const list = JSON.parse((await runCli(project, ['approvals', 'list', '--json'])).stdout) as {
      arguments: string;
      status: string;
    }[];
    assert.notEqual(list.find((a) => a.arguments.includes('task-cancel-1'))?.status, 'pending');
  });

  it('an unknown or made-up task id is an error, never another call', async () => {
    const r = await get('not-a-task');
    assert.ok(r.error, JSON.stringify(r));
    assert.match(r.error.message, /No task/);
  });

  it('a run_command that is still running after a moment continues as a task and completes with its output', async () => {
    const created = await send(
      'tools/call',
      { name: 'run_command', arguments: { script: 'sleep 4; echo task-output-1', waitMs: 10_000 } },
      'run_command',
    );
    assert.equal(created.result?.resultType, 'task', JSON.stringify(created));
    assert.equal(created.result?.status, 'working');
    const taskId = created.result?.taskId as string;
    const done = await pollUntil(
      async () => {
        const r = await get(taskId);
        return r.result?.status === 'completed' ? r : undefined;
      },
      'the command task completed',
      120_000,
      250,
    );
    assert.match(JSON.stringify(done!.result?.result), /task-output-1/);
  });

  it('a call that is quick answers with its result, not a task', async () => {
    const r = await send('tools/call', { name: 'recall_memory', arguments: { query: 'x' } }, 'recall_memory');
    assert.notEqual(r.result?.resultType, 'task', JSON.stringify(r));
    assert.ok(r.result?.structuredContent, JSON.stringify(r));
  });
});
