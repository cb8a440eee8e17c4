/**
 * Traces at an OTLP/HTTP receiver started by the test, decoded with the OpenTelemetry project's
 * own protobuf definitions: an agent run whose command calls an upstream MCP tool ten times over
 * the tool channel arrives as one whole trace — invoke_agent → execute_tool run_command → job →
 * execute_tool fixture_echo → tools/call echo — with no input values; with includeInputs the
 * call spans carry redacted inputs; a collector that is down fails no call.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { silentLogger } from '../../src/shared/logger.js';
import { OWNER } from '../../src/shared/principal.js';
import { createTracer } from '../../src/telemetry/index.js';
import { NOOP_TRACER } from '../../src/telemetry/types.js';
import { fixturePath } from '../fixtures/mcp/harness.js';
import { agentMd, startAgentsProject } from '../fixtures/providers/agents-project.js';
import { type OtlpReceiver, type ReceivedSpan, startOtlpReceiver } from '../helpers/otlp-receiver.js';
import { pollUntil } from '../helpers/poll.js';

const CALLS = 10;

const WORKER = agentMd(`
name: worker
description: Runs a script that calls an upstream tool through paddock-tool.
provider: local-openai
mcp_servers: [fixture]
tools: [launch_computer, run_command, fixture_echo]
`);

const serversYaml = () =>
  `mcpServers:\n  fixture:\n    command: ${JSON.stringify(process.execPath)}\n    args: [${JSON.stringify(fixturePath('stdio-server'))}, "--mode", "normal"]\n    startup: eager\n    permissions:\n      "*": auto\n`;

describe('OpenTelemetry traces over OTLP/HTTP', () => {
  let receiver: OtlpReceiver;
  before(async () => {
    receiver = await startOtlpReceiver();
  });
  after(async () => {
    await receiver?.close();
  });

  it('a channel-heavy agent run arrives as one whole trace, parent by parent, without input values', async () => {
    const p = await startAgentsProject({
      paddockYaml: () => `telemetry:\n  otlp:\n    endpoint: ${receiver.url}\n`,
      mcpServersYaml: serversYaml,
      agents: { worker: WORKER },
    });
    let runId = '';
    try {
      const loop = `for i in $(seq 1 ${CALLS}); do paddock-tool call fixture_echo "{\\"message\\":\\"secret-value-$i\\"}" >/dev/null || exit 1; done; echo done`;
      p.provider.script([
        { toolCalls: [{ name: 'launch_computer', arguments: { profileId: 'shell' } }] },
        {
          toolCalls: [{ name: 'run_command', arguments: { script: loop, waitMs: 10000, timeoutMs: 60000 } }],
        },
        { text: 'Done.' },
      ]);
      const run = await p.agents.run('worker');
      runId = run.id;
      assert.equal(run.status, 'succeeded', run.error ?? '');
      // the job may outlive waitMs on a slow machine: wait for its calls in the audit log
      await pollUntil(
        async () =>
          (await p.paddock.audit.query({ tool: 'fixture_echo' })).filter((r) => r.success).length === CALLS,
        'every channel call of the job',
        60_000,
      );
    } finally {
      await p.close(); // the tracer flushes last
    }
    assert.ok(receiver.contentTypes.every((t) => t === 'application/x-protobuf'));
    const root = receiver.spans.find((s) => s.name === 'invoke_agent worker');
    assert.ok(root, `the run's span arrived: ${receiver.spans.map((s) => s.name).join(', ')}`);
    assert.equal(root.parentSpanId, '');
    assert.equal(root.attributes['gen_ai.agent.id'], runId);
    const trace = receiver.spans.filter((s) => s.traceId === root.traceId);
    const byId = new Map(trace.map((s) => [s.spanId, s]));
    for (const s of trace)
      if (s !== root) assert.ok(byId.has(s.parentSpanId), `the parent of ${s.name} arrived`);
    const childrenOf = (parent: ReceivedSpan, name: string) =>
      trace.filter((s) => s.parentSpanId === parent.spanId && s.name === name);
    const [command] = childrenOf(root, 'execute_tool run_command');
    assert.ok(command, 'run_command is a child of the run');
    const [job] = trace.filter((s) => s.parentSpanId === command.spanId && s.name.startsWith('job '));
    assert.ok(job, 'the job is a child of run_command');
    const echoes = childrenOf(job, 'execute_tool fixture_echo');
    assert.equal(echoes.length, CALLS, 'every channel call is a child of the job');
    for (const e of echoes) {
      assert.equal(e.attributes['paddock.via'], 'channel');
      assert.equal(e.attributes['gen_ai.tool.name'], 'fixture_echo');
      const [upstream] = childrenOf(e, 'tools/call echo');
      assert.ok(upstream, 'the upstream call is a child of its channel call');
      assert.equal(upstream.kind, 3, 'SPAN_KIND_CLIENT');
      assert.equal(upstream.attributes['mcp.method.name'], 'tools/call');
      assert.equal(upstream.attributes['network.transport'], 'pipe');
      assert.ok(upstream.startNanos >= e.startNanos && upstream.endNanos <= e.endNanos);
    }
    assert.equal(root.resource['service.name'], 'paddock');
    const raw = Buffer.concat(receiver.bodies).toString('latin1');
    assert.ok(!raw.includes('secret-value'), 'no input value left the server');
    assert.ok(trace.every((s) => s.attributes['gen_ai.tool.call.arguments'] === undefined));
  });

  it('with includeInputs, call spans carry the input redacted; a failed call is an error span with its code', async () => {
    const before = receiver.spans.length;
    const tracer = createTracer(
      { serviceName: 'paddock-test', otlp: { endpoint: receiver.url, headers: {}, includeInputs: true } },
      'srv_test',
      silentLogger(),
    );
    const { Gateway } = await import('../../src/tools/gateway.js');
    const { ToolRegistry } = await import('../../src/tools/registry.js');
    const { PermissionPolicy } = await import('../../src/tools/permissions.js');
    const { InputValidator } = await import('../../src/tools/validation.js');
    const { SqliteAuditStore } = await import('../../src/store/sqlite/audit-store.js');
    const { openDatabase } = await import('../../src/store/sqlite/database.js');
    const { createWhitelistSandbox } = await import('../../src/policy/index.js');
    const { policySchema } = await import('../../src/config/schema.js');
    const registry = new ToolRegistry();
    registry.register([
      {
        name: 'login',
        description: 'd',
        inputSchema: {
          type: 'object',
          properties: { user: { type: 'string' }, password: { type: 'string' } },
        },
        annotations: {},
        source: 'builtin',
        toolsets: ['builtin'],
        execute: async () => ({ structured: { ok: true } }),
      },
    ]);
    const db = openDatabase(':memory:');
    const gateway = new Gateway({
      registry,
      audit: new SqliteAuditStore(db),
      policy: createWhitelistSandbox(policySchema.parse({})),
      permissions: new PermissionPolicy([{ pattern: 'login', permission: 'auto', origin: 'test' }]),
      validator: new InputValidator(),
      logger: silentLogger(),
      tracer,
    });
    const caller = { principal: OWNER, caller: 'mcp:t', via: 'direct' as const, attended: true };
    assert.ok((await gateway.call('login', { user: 'ann', password: 'hunter2-very-secret' }, caller)).ok);
    assert.equal((await gateway.call('no_such_tool', {}, caller)).ok, false);
    await tracer.close();
    db.close();
    const spans = receiver.spans.slice(before);
    const login = spans.find((s) => s.name === 'execute_tool login');
    assert.ok(login);
    const args = String(login.attributes['gen_ai.tool.call.arguments']);
    assert.match(args, /"user":"ann"/);
    assert.doesNotMatch(args, /hunter2/, 'secrets are redacted like the audit log');
    const missing = spans.find((s) => s.name === 'execute_tool no_such_tool');
    assert.deepEqual([missing?.status.code, missing?.attributes['error.type']], [2, 'NOT_FOUND']);
    assert.equal(login.resource['service.name'], 'paddock-test');
  });

  it('is off without an endpoint, and a collector that is down fails no call', async () => {
    assert.equal(
      createTracer({ serviceName: 'p', otlp: { headers: {}, includeInputs: false } }, 's', silentLogger()),
      NOOP_TRACER,
    );
    const down = await startOtlpReceiver();
    const url = down.url;
    await down.close();
    const tracer = createTracer(
      { serviceName: 'p', otlp: { endpoint: url, headers: {}, includeInputs: false } },
      's',
      silentLogger(),
    );
    const span = tracer.start('execute_tool x');
    span.end();
    await tracer.close(); // resolves: the failed export is logged and dropped
  });
});
