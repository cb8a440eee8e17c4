import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, it } from 'node:test';
import type Database from 'better-sqlite3';
import { argumentsSha256, canonicalJson } from '../../../src/approvals/canonical.js';
import { ApprovalService, type ApprovalServiceOptions } from '../../../src/approvals/service.js';
import type { Approval } from '../../../src/approvals/types.js';
import { ChannelSession } from '../../../src/channel/session.js';
import { encodeRequest } from '../../../src/channel/wire.js';
import { policySchema } from '../../../src/config/schema.js';
import { createWhitelistSandbox } from '../../../src/policy/index.js';
import { silentLogger } from '../../../src/shared/logger.js';
import { OWNER } from '../../../src/shared/principal.js';
import { SqliteApprovalStore } from '../../../src/store/sqlite/approval-store.js';
import { SqliteAuditStore } from '../../../src/store/sqlite/audit-store.js';
import { openDatabase } from '../../../src/store/sqlite/database.js';
import { type CallOutcome, Gateway } from '../../../src/tools/gateway.js';
import { PermissionPolicy } from '../../../src/tools/permissions.js';
import { ToolRegistry } from '../../../src/tools/registry.js';
import type { CallerContext, Tool } from '../../../src/tools/tool.js';
import { InputValidator } from '../../../src/tools/validation.js';

function tool(name: string, effects: unknown[]): Tool {
  return {
    name,
    description: `${name}: posts a message`,
    inputSchema: { type: 'object', properties: { text: { type: 'string' } }, additionalProperties: false },
    annotations: {},
    source: 'builtin',
    toolsets: ['builtin'],
    execute: async (input) => {
      effects.push(input);
      return { structured: { posted: input.text } };
    },
  };
}

const mcp = (id = 'test'): CallerContext => ({
  principal: OWNER,
  caller: `mcp:${id}`,
  via: 'direct',
  attended: true,
});

describe('canonical arguments', () => {
  it('hashes equal arguments alike whatever their key order, and other arguments differently', () => {
    assert.equal(
      canonicalJson({ b: 1, a: { d: [1, { z: 1, y: 2 }], c: 'x' } }),
      '{"a":{"c":"x","d":[1,{"y":2,"z":1}]},"b":1}',
    );
    assert.equal(argumentsSha256({ a: 1, b: 2 }), argumentsSha256({ b: 2, a: 1 }));
    assert.notEqual(argumentsSha256({ a: 1, b: 2 }), argumentsSha256({ a: 1, b: 3 }));
  });
});

describe('approvals at the gateway', () => {
  let dir: string;
  let db: Database.Database;
  let audit: SqliteAuditStore;
  let effects: unknown[];
  let approvals: ApprovalService;
  let gateway: Gateway;
  let requested: Approval[];

  const build = async (options: Partial<ApprovalServiceOptions> = {}) => {
    approvals = await ApprovalService.open({
      store: new SqliteApprovalStore(db),
      logger: silentLogger(),
      mcp: 'gateway',
      timeoutMs: 60_000,
      maxPendingPerCaller: 10,
      describe: (name) => `${name}: posts a message`,
      ...options,
    });
    approvals.watch({ listener: (e) => e.kind === 'requested' && requested.push(e.approval) });
    const registry = new ToolRegistry();
    registry.register([tool('post', effects), tool('free', effects)]);
    gateway = new Gateway({
      registry,
      audit,
      policy: createWhitelistSandbox(policySchema.parse({})),
      permissions: new PermissionPolicy([{ pattern: 'post', permission: 'ask', origin: 'test' }]),
      validator: new InputValidator(),
      logger: silentLogger(),
      approvals,
    });
  };

  /** Resolves with the next approval requested (pushed by the service, never polled). */
  const nextRequest = (): Promise<Approval> =>
    new Promise((resolve) => {
      const sub = approvals.watch({
        listener: (e) => {
          if (e.kind !== 'requested') return;
          sub.dispose();
          resolve(e.approval);
        },
      });
    });

  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'paddock-approvals-'));
    db = openDatabase(join(dir, 'a.db'));
    audit = new SqliteAuditStore(db);
    effects = [];
    requested = [];
    await build();
  });
  afterEach(async () => {
    await approvals.close();
    db.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('a call waits until a person approves it, then runs; its audit row names the approval and the approver', async () => {
    const pending = nextRequest();
    const call = gateway.call('post', { text: 'hi' }, mcp());
    const approval = await pending;
    assert.equal(approval.status, 'pending');
    assert.equal(approval.arguments, '{"text":"hi"}');
    assert.equal(approval.argumentsSha256, argumentsSha256({ text: 'hi' }));
    assert.equal(approval.caller, 'mcp:test');
    assert.deepEqual(effects, []);
    await approvals.decide(approval.id, { approve: true, by: 'dock:owner', via: 'dock' });
    const outcome = await call;
    assert.equal(outcome.ok, true);
    assert.deepEqual(effects, [{ text: 'hi' }]);
    const row = (await audit.get(outcome.invocationId))!;
    assert.equal(row.approvalId, approval.id);
    assert.equal(row.approver, 'dock:owner');
    assert.equal(row.success, true);
    assert.equal((await approvals.view(approval.id))?.status, 'approved');
    assert.equal((await approvals.view(approval.id))?.invocationId, outcome.invocationId);
  });

  it('a denial refuses the call with PERMISSION_REQUIRED and the reason, and nothing runs', async () => {
    const pending = nextRequest();
    const call = gateway.call('post', { text: 'hi' }, mcp());
    const approval = await pending;
    await approvals.decide(approval.id, { approve: false, by: 'cli', via: 'cli', reason: 'wrong channel' });
    const outcome = await call;
    assert.equal(outcome.ok, false);
    assert.equal(!outcome.ok && outcome.error.code, 'PERMISSION_REQUIRED');
    assert.match(!outcome.ok ? outcome.error.message : '', /wrong channel/);
    assert.deepEqual(effects, []);
    const row = (await audit.get(outcome.invocationId))!;
    assert.equal(row.success, false);
    assert.equal(row.approvalId, approval.id);
    assert.equal(row.approver, 'cli');
  });

  it('an approval that expires is a denial, recorded as expired with no approver', async () => {
    await approvals.close();
    await build({ timeoutMs: 30 });
    const outcome = await gateway.call('post', { text: 'late' }, mcp());
    assert.equal(!outcome.ok && outcome.error.code, 'PERMISSION_REQUIRED');
    assert.match(!outcome.ok ? outcome.error.message : '', /expired/);
    assert.deepEqual(effects, []);
    const row = (await audit.get(outcome.invocationId))!;
    const approval = (await approvals.view(row.approvalId!))!;
    assert.equal(approval.status, 'expired');
    assert.equal(row.approver, null);
    await assert.rejects(
      approvals.decide(approval.id, { approve: true, by: 'cli', via: 'cli' }),
      (e: Error & { code?: string }) => e.code === 'INVALID_ARGUMENT' && /already expired/.test(e.message),
    );
  });

  it('a decision covers its call only: the next call asks again, even with the same arguments', async () => {
    let pending = nextRequest();
    let call = gateway.call('post', { text: 'a' }, mcp());
    const first = await pending;
    await approvals.decide(first.id, { approve: true, by: 'cli', via: 'cli' });
    await call;
    pending = nextRequest();
    call = gateway.call('post', { text: 'a' }, mcp());
    const second = await pending;
    assert.notEqual(second.id, first.id);
    await approvals.decide(second.id, { approve: false, by: 'cli', via: 'cli' });
    assert.equal((await call).ok, false);
    assert.deepEqual(effects, [{ text: 'a' }]);
  });

  it('"approve for this session" lets the same caller run the tool again without asking, naming the approval', async () => {
    const pending = nextRequest();
    const call = gateway.call('post', { text: 'a' }, mcp());
    const approval = await pending;
    await approvals.decide(approval.id, { approve: true, by: 'dock:owner', via: 'dock', scope: 'session' });
    await call;
    const again = await gateway.call('post', { text: 'b' }, mcp());
    assert.equal(again.ok, true);
    assert.equal((await audit.get(again.invocationId))?.approvalId, approval.id);
    assert.equal(requested.length, 1);
    // another session still asks
    const other = nextRequest();
    const third = gateway.call('post', { text: 'c' }, mcp('other'));
    await approvals.decide((await other).id, { approve: false, by: 'cli', via: 'cli' });
    assert.equal((await third).ok, false);
    approvals.endSession('mcp:test');
    const fourth = nextRequest();
    const call4 = gateway.call('post', { text: 'd' }, mcp());
    await approvals.decide((await fourth).id, { approve: false, by: 'cli', via: 'cli' });
    assert.equal((await call4).ok, false);
  });

  it('a second decision, an unknown id and "always" outside an agent run are clear errors', async () => {
    const pending = nextRequest();
    const call = gateway.call('post', { text: 'a' }, mcp());
    const approval = await pending;
    await assert.rejects(
      approvals.decide(approval.id, { approve: true, by: 'cli', via: 'cli', scope: 'always' }),
      /agent run only/,
    );
    await approvals.decide(approval.id, { approve: true, by: 'cli', via: 'cli' });
    await call;
    await assert.rejects(
      approvals.decide(approval.id, { approve: false, by: 'dock:owner', via: 'dock' }),
      (e: Error & { code?: string }) =>
        e.code === 'INVALID_ARGUMENT' && /already approved by cli/.test(e.message),
    );
    await assert.rejects(
      approvals.decide('apr_nope', { approve: true, by: 'cli', via: 'cli' }),
      (e: Error & { code?: string }) => e.code === 'NOT_FOUND',
    );
    assert.equal(effects.length, 1);
  });

  it('bounds the pending approvals of one caller', async () => {
    await approvals.close();
    await build({ maxPendingPerCaller: 1 });
    const pending = nextRequest();
    const first = gateway.call('post', { text: 'a' }, mcp());
    const approval = await pending;
    const second = await gateway.call('post', { text: 'b' }, mcp());
    assert.equal(!second.ok && second.error.code, 'LIMIT_EXCEEDED');
    await approvals.decide(approval.id, { approve: false, by: 'cli', via: 'cli' });
    await first;
    assert.deepEqual(effects, []);
  });

  it('a caller that cancels while waiting ends its approval as cancelled; nothing runs', async () => {
    const controller = new AbortController();
    const pending = nextRequest();
    const call = gateway.call('post', { text: 'a' }, { ...mcp(), signal: controller.signal });
    const approval = await pending;
    controller.abort();
    const outcome = await call;
    assert.equal(!outcome.ok && outcome.error.code, 'TIMEOUT');
    assert.equal((await approvals.view(approval.id))?.status, 'cancelled');
    assert.deepEqual(effects, []);
  });

  it('a server that stops while a call waits fails the call cleanly; the next start marks the record interrupted', async () => {
    const pending = nextRequest();
    const call = gateway.call('post', { text: 'a' }, mcp());
    const approval = await pending;
    await approvals.close();
    const outcome: CallOutcome = await call;
    assert.equal(!outcome.ok && outcome.error.code, 'NOT_RUNNING');
    assert.equal((await approvals.view(approval.id))?.status, 'interrupted');
    assert.equal((await audit.get(outcome.invocationId))?.approvalId, approval.id);
    // a record a crashed server left pending
    const store = new SqliteApprovalStore(db);
    await store.insert({ ...approval, id: 'apr_left', invocationId: 'inv_left' });
    // owned by a process that no longer exists (above the kernel's largest pid)
    db.prepare('UPDATE approvals SET owner_pid = ? WHERE id = ?').run(2 ** 22 + 1, 'apr_left');
    await store.insert({ ...approval, id: 'apr_live', invocationId: 'inv_live' });
    db.prepare('UPDATE approvals SET owner_pid = ? WHERE id = ?').run(process.ppid, 'apr_live');
    await build();
    assert.equal((await approvals.view('apr_left'))?.status, 'interrupted');
    await assert.rejects(
      approvals.decide('apr_left', { approve: true, by: 'cli', via: 'cli' }),
      /already interrupted/,
    );
    // the wait of another live process (a one-shot CLI command on the same database) is left alone
    assert.equal((await approvals.view('apr_live'))?.status, 'pending');
    await assert.rejects(
      approvals.decide('apr_live', { approve: true, by: 'cli', via: 'cli' }),
      (e: Error & { code?: string }) => e.code === 'NOT_RUNNING' && /another Paddock process/.test(e.message),
    );
    assert.equal((await approvals.view('apr_live'))?.status, 'pending');
    assert.deepEqual(effects, []);
  });

  it('an MCP client that declared elicitation is asked; its answer runs or refuses the call with its reason', async () => {
    const prompts: string[] = [];
    const eliciting = (answer: { approve: boolean; reason?: string }): CallerContext => ({
      ...mcp(),
      approvals: {
        elicit: async (prompt) => {
          prompts.push(`${prompt.tool} ${JSON.stringify(prompt.arguments)}`);
          return answer;
        },
      },
    });
    const ok = await gateway.call('post', { text: 'yes' }, eliciting({ approve: true }));
    assert.equal(ok.ok, true);
    assert.equal((await audit.get(ok.invocationId))?.approver, 'mcp:test');
    const no = await gateway.call('post', { text: 'no' }, eliciting({ approve: false, reason: 'not now' }));
    assert.equal(!no.ok && no.error.code, 'PERMISSION_REQUIRED');
    assert.match(!no.ok ? no.error.message : '', /not now/);
    assert.deepEqual(prompts, ['post {"text":"yes"}', 'post {"text":"no"}']);
    assert.deepEqual(effects, [{ text: 'yes' }]);
    assert.equal(
      (await approvals.view((await audit.get(no.invocationId))!.approvalId!))?.decidedVia,
      'elicitation',
    );
  });

  it('without a configured mode an MCP client waits only when it can elicit or a dock page is open', async () => {
    await approvals.close();
    await build({ mcp: undefined });
    const direct = await gateway.call('post', { text: 'a' }, mcp());
    assert.equal(direct.ok, true, 'no elicitation, no dock: the client confirms, as before');
    assert.equal((await audit.get(direct.invocationId))?.approvalId, null);
    const dock = approvals.watch({ listener: () => {}, decider: true });
    const pending = nextRequest();
    const call = gateway.call('post', { text: 'b' }, mcp());
    await approvals.decide((await pending).id, { approve: true, by: 'dock:owner', via: 'dock' });
    assert.equal((await call).ok, true);
    dock.dispose();
    assert.equal(approvals.whoWaits(mcp()), 'client');
  });

  it('unattended callers: refused and unlisted without a wait; an agent run that may wait waits and is listed the tool', async () => {
    const channel: CallerContext = {
      principal: OWNER,
      caller: 'channel:g1.job1',
      via: 'channel',
      attended: false,
      jobId: 'g1.job1',
    };
    const refused = await gateway.call('post', { text: 'a' }, channel);
    assert.equal(!refused.ok && refused.error.code, 'PERMISSION_REQUIRED');
    assert.ok(!gateway.listTools(channel).some((t) => t.name === 'post'));
    const agent: CallerContext = {
      principal: OWNER,
      caller: 'agent:run1',
      via: 'agent',
      attended: false,
      runId: 'run1',
      parentId: 'run1',
      approvals: { waitMs: 60_000, agent: 'digest' },
    };
    assert.ok(gateway.listTools(agent).some((t) => t.name === 'post'));
    const pending = nextRequest();
    const call = gateway.call('post', { text: 'a' }, agent);
    const approval = await pending;
    assert.equal(approval.agent, 'digest');
    assert.equal(approval.runId, 'run1');
    await approvals.decide(approval.id, { approve: true, by: 'dock:owner', via: 'dock', scope: 'always' });
    assert.equal((await call).ok, true);
    // the rule stands for the agent, even for a run that may not wait
    const rules = await approvals.rules();
    assert.equal(rules.length, 1);
    assert.deepEqual(
      [rules[0]?.agent, rules[0]?.tool, rules[0]?.approvalId],
      ['digest', 'post', approval.id],
    );
    const later: CallerContext = { ...agent, caller: 'agent:run2', approvals: { agent: 'digest' } };
    assert.ok(gateway.listTools(later).some((t) => t.name === 'post'));
    const ruled = await gateway.call('post', { text: 'b' }, later);
    assert.equal(ruled.ok, true);
    const row = (await audit.get(ruled.invocationId))!;
    assert.equal(row.approvalId, approval.id);
    assert.equal(row.policyRule, `approvals.rules[${rules[0]?.id}]`);
    await approvals.removeRule(rules[0]!.id, 'cli');
    const undone = await gateway.call('post', { text: 'c' }, later);
    assert.equal(!undone.ok && undone.error.code, 'PERMISSION_REQUIRED');
    assert.equal(requested.length, 1);
    assert.deepEqual(effects, [{ text: 'a' }, { text: 'b' }]);
  });

  it('the tool channel of an agent that may wait, with an always-allow rule, still neither lists nor calls ask tools', async () => {
    const agent: CallerContext = {
      principal: OWNER,
      caller: 'agent:run9',
      via: 'agent',
      attended: false,
      runId: 'run9',
      approvals: { waitMs: 60_000, agent: 'digest' },
    };
    const pending = nextRequest();
    const call = gateway.call('post', { text: 'ruled' }, agent);
    await approvals.decide((await pending).id, { approve: true, by: 'cli', via: 'cli', scope: 'always' });
    assert.equal((await call).ok, true);
    const channel = new ChannelSession(
      gateway,
      { caller: agent, parentId: 'inv_run_command', jobId: 'g1.job7', deadline: Date.now() + 60_000 },
      silentLogger(),
    );
    const list = JSON.parse(
      (await channel.handle({ kind: 'request', id: 'c1', payload: encodeRequest({ v: 1, op: 'list' }) }))!,
    ) as { result: { tools: { name: string }[] } };
    assert.deepEqual(
      list.result.tools.map((t) => t.name),
      ['free'],
    );
    const refused = JSON.parse(
      (await channel.handle({
        kind: 'request',
        id: 'c2',
        payload: encodeRequest({ v: 1, op: 'call', name: 'post', args: { text: 'from a script' } }),
      }))!,
    ) as { ok: boolean; error: { code: string } };
    assert.equal(refused.ok, false);
    assert.equal(refused.error.code, 'PERMISSION_REQUIRED');
    assert.equal(requested.length, 1, 'the channel never asks a person');
    assert.deepEqual(effects, [{ text: 'ruled' }]);
  });
});
