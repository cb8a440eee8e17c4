import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { RunEvent } from '../../../src/agents/events.js';
import type { AgentRun } from '../../../src/agents/types.js';
import {
  dockAgentsFromService,
  RUN_TEXT_PREVIEW_CHARS,
  toDockAgentRun,
} from '../../../src/web/dock/agents-adapter.js';
import { clientMessageSchema, MAX_AGENT_INPUT_CHARS } from '../../../src/web/dock/protocol.js';
import type { AgentsChange } from '../../../src/web/dock/sources.js';
import { type AgentsProject, agentMd, startAgentsProject } from '../../fixtures/providers/agents-project.js';
import { type DockServer, openSocket, startDockServer, type TestSocket } from './harness.js';

const NOTER = agentMd(
  `
name: noter
description: Saves a note and says so.
provider: local-openai
tools: [save_memory]
schedules: [{cron: "0 9 * * *", timezone: UTC}]
`,
  'Save a note, then report.',
);
const BROKEN = agentMd(
  'name: broken\ndescription: Bad cron.\nprovider: local-openai\nschedules: ["99 * * * *"]',
);

describe('dock protocol: agent requests', () => {
  it('accepts agent.run with and without input, and agent.show', () => {
    for (const m of [
      { type: 'agent.run', name: 'noter' },
      { type: 'agent.run', name: 'noter', input: 'today only', requestId: 'r1' },
      { type: 'agent.show', runId: 'run_abc' },
    ]) {
      assert.equal(clientMessageSchema.safeParse(m).success, true, JSON.stringify(m));
    }
  });

  it('rejects a missing name, oversized input, extra fields such as a trigger, and an empty run id', () => {
    for (const m of [
      { type: 'agent.run' },
      { type: 'agent.run', name: '' },
      { type: 'agent.run', name: 'noter', input: 'x'.repeat(MAX_AGENT_INPUT_CHARS + 1) },
      { type: 'agent.run', name: 'noter', trigger: 'schedule' },
      { type: 'agent.run', name: 'noter', caller: 'agent:run_x' },
      { type: 'agent.show', runId: '' },
      { type: 'agent.show', runId: 'r'.repeat(65) },
      { type: 'agent.cancel', runId: 'run_abc' },
    ]) {
      assert.equal(clientMessageSchema.safeParse(m).success, false, JSON.stringify(m).slice(0, 80));
    }
  });
});

describe('dock agents adapter', () => {
  it('shortens long run texts in lists and keeps them whole in details', () => {
    const run: AgentRun = {
      id: 'run_1',
      agent: 'a',
      trigger: 'api',
      startedAt: 1,
      endedAt: 2,
      status: 'succeeded',
      turns: 1,
      inputTokens: 3,
      outputTokens: 4,
      finalAnswer: 'y'.repeat(RUN_TEXT_PREVIEW_CHARS + 10),
      error: null,
      errorCode: null,
      input: 'short',
      provider: 'p',
      model: 'm',
      scheduledAt: null,
      pid: 1,
      skills: [],
      deliveries: [{ channel: 'ops', ok: false, error: 'down' }],
    };
    const listed = toDockAgentRun(run, RUN_TEXT_PREVIEW_CHARS);
    assert.equal(listed.finalAnswer?.length, RUN_TEXT_PREVIEW_CHARS);
    assert.ok(listed.finalAnswer?.endsWith('…'));
    assert.equal(listed.input, 'short');
    assert.deepEqual(listed.deliveries, [{ channel: 'ops', ok: false, error: 'down' }]);
    assert.equal(toDockAgentRun(run, Number.POSITIVE_INFINITY).finalAnswer, run.finalAnswer);
  });

  it('turns run events into agent and run changes', () => {
    let emit: (e: RunEvent) => void = () => undefined;
    const adapter = dockAgentsFromService({
      list: async () => [],
      loadErrors: () => [],
      runs: async () => [],
      show: async () => undefined,
      start: () => {
        throw new Error('not used');
      },
      onRunEvent(listener) {
        emit = listener;
        return { dispose: () => undefined };
      },
    });
    const seen: AgentsChange[] = [];
    adapter.onChange((c) => seen.push(c));
    const run = { id: 'run_9' } as AgentRun;
    emit({ type: 'run.started', run });
    emit({ type: 'run.turn', runId: 'run_9', agent: 'a', turn: 1, inputTokens: 1, outputTokens: 1 });
    emit({ type: 'run.tool_call', runId: 'run_9', agent: 'a', tool: 't', invocationId: 'i', ok: true });
    emit({ type: 'schedule.tick', agent: 'a', schedule: 'k', scheduledAt: 1, action: 'skipped' });
    emit({ type: 'run.finished', run });
    assert.deepEqual(seen, [
      { kind: 'run', runId: 'run_9' },
      { kind: 'agents' },
      { kind: 'run', runId: 'run_9' },
      { kind: 'run', runId: 'run_9' },
      { kind: 'agents' },
      { kind: 'run', runId: 'run_9' },
      { kind: 'agents' },
    ]);
  });
});

describe('dock websocket: agents', () => {
  let project: AgentsProject;
  let server: DockServer;
  let socket: TestSocket;

  before(async () => {
    project = await startAgentsProject({ agents: { noter: NOTER, broken: BROKEN } });
    server = await startDockServer({ agents: dockAgentsFromService(project.agents) });
    const cookie = await server.login();
    socket = await openSocket(server, { cookie, origin: server.base });
  });

  after(async () => {
    await socket?.close();
    await server?.close();
    await project?.close();
  });

  it('lists agents with their next scheduled time and the agents that did not load', async () => {
    const snap = await socket.next('snapshot');
    assert.ok(snap.agents, 'the snapshot carries the agents');
    const noter = snap.agents.agents.find((a) => a.name === 'noter');
    assert.ok(noter);
    assert.equal(noter.provider, 'local-openai');
    assert.equal(noter.schedules[0]?.cron, '0 9 * * *');
    assert.equal(noter.schedules[0]?.timezone, 'UTC');
    const next = noter.schedules[0]?.next ?? 0;
    assert.ok(next > Date.now(), 'the next time is in the future');
    assert.equal(new Date(next).getUTCHours(), 9);
    assert.deepEqual(
      snap.agents.loadErrors.map((e) => e.agent),
      ['broken'],
    );
    assert.match(snap.agents.loadErrors[0]?.problems.join('\n') ?? '', /invalid cron expression/);
  });

  it('runs an agent from the page with trigger api, streams the run and shows its calls by depth', async () => {
    project.provider.script([
      { toolCalls: [{ name: 'save_memory', arguments: { content: 'from the dock' } }] },
      { text: 'Noted.' },
    ]);
    socket.send({ type: 'agent.run', name: 'noter', input: 'go', requestId: 'r-run' });
    const started = await socket.next('agent.started', (m) => m.requestId === 'r-run');
    const reply = await socket.next('reply', (m) => m.requestId === 'r-run');
    assert.equal(reply.ok, true, reply.message);
    const done = await socket.next(
      'agent.run',
      (m) => m.run.id === started.runId && m.run.status === 'succeeded',
      15_000,
    );
    assert.equal(done.run.trigger, 'api');
    assert.equal(done.run.input, 'go');
    assert.equal(done.run.finalAnswer, 'Noted.');
    assert.equal(done.run.turns, 2);
    const after = await socket.next('agents', (m) =>
      m.agents.agents.some((a) => a.lastRun?.id === started.runId && a.lastRun.status === 'succeeded'),
    );
    assert.equal(after.agents.agents.find((a) => a.name === 'noter')?.running, null, 'no longer running');

    socket.send({ type: 'agent.show', runId: started.runId, requestId: 'r-show' });
    const details = await socket.next('agent.details', (m) => m.run.id === started.runId);
    assert.equal(details.truncated, false);
    assert.deepEqual(
      details.calls.map((c) => [c.tool, c.depth, c.caller, c.via, c.success, c.parentId]),
      [['save_memory', 1, `agent:${started.runId}`, 'agent', true, started.runId]],
    );
    assert.equal(socket.invalid.length, 0);
  });

  it('refuses an unknown agent, a broken one, and an unknown run with what to do', async () => {
    socket.send({ type: 'agent.run', name: 'ghost', requestId: 'r-ghost' });
    const ghost = await socket.next('reply', (m) => m.requestId === 'r-ghost');
    assert.equal(ghost.ok, false);
    assert.equal(ghost.code, 'NOT_FOUND');
    assert.match(ghost.message, /use one of: noter/);
    socket.send({ type: 'agent.run', name: 'broken', requestId: 'r-broken' });
    const broken = await socket.next('reply', (m) => m.requestId === 'r-broken');
    assert.equal(broken.code, 'INVALID_ARGUMENT');
    assert.match(broken.message, /did not load/);
    socket.send({ type: 'agent.show', runId: 'run_nope', requestId: 'r-nope' });
    const nope = await socket.next('reply', (m) => m.requestId === 'r-nope');
    assert.equal(nope.code, 'NOT_FOUND');
    socket.send({ type: 'agent.run', name: 'noter', trigger: 'schedule', requestId: 'r-extra' });
    const extra = await socket.next('reply', (m) => m.request === 'unknown' && !m.ok);
    assert.equal(extra.code, 'INVALID_ARGUMENT');
  });
});

describe('dock websocket without agents', () => {
  it('sends no agents in the snapshot and refuses agent requests', async () => {
    const server = await startDockServer();
    try {
      const socket = await openSocket(server, { cookie: await server.login(), origin: server.base });
      try {
        const snap = await socket.next('snapshot');
        assert.equal(snap.agents, null);
        socket.send({ type: 'agent.run', name: 'noter', requestId: 'r1' });
        const reply = await socket.next('reply', (m) => m.requestId === 'r1');
        assert.equal(reply.code, 'UNSUPPORTED_CAPABILITY');
      } finally {
        await socket.close();
      }
    } finally {
      await server.close();
    }
  });
});
