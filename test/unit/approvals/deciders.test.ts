/**
 * approvals.deciders at the gateway (real SQLite stores): a third party never decides its own
 * call — what its client is shown is a notice, its answer counts for nothing — and its call
 * waits for the dock or the CLI as configured; the owner's client decides for itself only when
 * the owner's deciders list elicitation.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, it } from 'node:test';
import type Database from 'better-sqlite3';
import { DEFAULT_DECIDERS, type Deciders } from '../../../src/approvals/deciders.js';
import { ApprovalService } from '../../../src/approvals/service.js';
import type { Approval } from '../../../src/approvals/types.js';
import { policySchema } from '../../../src/config/schema.js';
import { createWhitelistSandbox } from '../../../src/policy/index.js';
import { isPaddockError } from '../../../src/shared/errors.js';
import { silentLogger } from '../../../src/shared/logger.js';
import { OWNER, type Principal } from '../../../src/shared/principal.js';
import { SqliteApprovalStore } from '../../../src/store/sqlite/approval-store.js';
import { SqliteAuditStore } from '../../../src/store/sqlite/audit-store.js';
import { openDatabase } from '../../../src/store/sqlite/database.js';
import type { ApprovalPrompt } from '../../../src/tools/approval-gate.js';
import { Gateway } from '../../../src/tools/gateway.js';
import { PermissionPolicy } from '../../../src/tools/permissions.js';
import { ToolRegistry } from '../../../src/tools/registry.js';
import type { CallerContext, Tool } from '../../../src/tools/tool.js';
import { InputValidator } from '../../../src/tools/validation.js';

const CLIENT: Principal = { kind: 'client', id: 'cl_x', name: 'X', computers: [] };

describe('who decides whose approvals', () => {
  let dir: string;
  let db: Database.Database;
  let approvals: ApprovalService;
  let gateway: Gateway;
  let effects: unknown[];

  const build = async (deciders: Deciders = DEFAULT_DECIDERS, mcp?: 'client' | 'gateway') => {
    await approvals?.close();
    approvals = await ApprovalService.open({
      store: new SqliteApprovalStore(db),
      logger: silentLogger(),
      ...(mcp ? { mcp } : {}),
      timeoutMs: 60_000,
      maxPendingPerCaller: 10,
      deciders,
    });
    const registry = new ToolRegistry();
    const post: Tool = {
      name: 'post',
      description: 'posts',
      inputSchema: { type: 'object', properties: { text: { type: 'string' } } },
      annotations: {},
      source: 'builtin',
      toolsets: ['builtin'],
      execute: async (input) => {
        effects.push(input);
        return { structured: { ok: true } };
      },
    };
    registry.register([post]);
    gateway = new Gateway({
      registry,
      audit: new SqliteAuditStore(db),
      policy: createWhitelistSandbox(policySchema.parse({})),
      permissions: new PermissionPolicy([{ pattern: 'post', permission: 'ask', origin: 'test' }]),
      validator: new InputValidator(),
      logger: silentLogger(),
      approvals,
    });
  };

  const requested = (): Promise<Approval> =>
    new Promise((resolve) => {
      const sub = approvals.watch({
        listener: (e) => {
          if (e.kind !== 'requested') return;
          sub.dispose();
          resolve(e.approval);
        },
      });
    });

  /** A caller whose client declared elicitation and always answers "approve". */
  const eliciting = (principal: Principal, prompts: ApprovalPrompt[]): CallerContext => ({
    caller: principal.kind === 'owner' ? 'mcp:s1' : 'mcp:cl_x:s1',
    principal,
    via: 'direct',
    attended: true,
    approvals: {
      elicit: async (prompt) => {
        prompts.push(prompt);
        return { approve: true };
      },
    },
  });

  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'paddock-deciders-'));
    db = openDatabase(join(dir, 'a.db'));
    effects = [];
    await build();
  });
  afterEach(async () => {
    await approvals.close();
    db.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('a client that answers "approve" to its own call decides nothing: it was told, the dock decides', async () => {
    const prompts: ApprovalPrompt[] = [];
    const pending = requested();
    const call = gateway.call('post', { text: 'mine' }, eliciting(CLIENT, prompts));
    const approval = await pending;
    await new Promise<void>((resolve) => setImmediate(resolve));
    assert.equal(prompts.length, 1);
    assert.equal(prompts[0]?.decides, false, 'the client is shown a notice');
    assert.equal((await approvals.view(approval.id))?.status, 'pending');
    assert.deepEqual(effects, []);
    await approvals.decide(approval.id, { approve: true, by: 'dock:owner', via: 'dock' });
    const outcome = await call;
    assert.equal(outcome.ok, true);
    assert.deepEqual(effects, [{ text: 'mine' }]);
  });

  it('a client’s call waits for the gateway even with approvals.mcp: client (it never confirms itself)', async () => {
    await build(DEFAULT_DECIDERS, 'client');
    const client: CallerContext = { caller: 'mcp:cl_x:s2', principal: CLIENT, via: 'direct', attended: true };
    assert.equal(approvals.whoWaits(client), 'gateway');
    assert.equal(approvals.whoWaits({ ...client, caller: 'mcp:s2', principal: OWNER }), 'client');
  });

  it('refuses a decision from a place approvals.deciders does not list for that principal', async () => {
    await build({ ...DEFAULT_DECIDERS, clients: ['dock'] });
    const pending = requested();
    const call = gateway.call('post', { text: 'x' }, eliciting(CLIENT, []));
    const approval = await pending;
    for (const via of ['cli', 'elicitation'] as const) {
      await assert.rejects(
        approvals.decide(approval.id, { approve: true, by: via, via }),
        (e: unknown) =>
          isPaddockError(e) &&
          e.code === 'PERMISSION_REQUIRED' &&
          /approvals\.deciders\.clients lists dock/.test(e.message),
      );
    }
    assert.equal((await approvals.view(approval.id))?.status, 'pending');
    await approvals.decide(approval.id, { approve: false, by: 'dock:owner', via: 'dock', reason: 'no' });
    const outcome = await call;
    assert.equal(outcome.ok, false);
    assert.deepEqual(effects, []);
  });

  it('the owner’s client decides its own call by default, and only informs when elicitation is left out', async () => {
    const decided: ApprovalPrompt[] = [];
    const outcome = await gateway.call('post', { text: 'owner' }, eliciting(OWNER, decided));
    assert.equal(outcome.ok, true);
    assert.equal(decided[0]?.decides, true);

    await build({ ...DEFAULT_DECIDERS, owner: ['dock', 'cli'] });
    const told: ApprovalPrompt[] = [];
    const pending = requested();
    const call = gateway.call('post', { text: 'owner-2' }, eliciting(OWNER, told));
    const approval = await pending;
    await new Promise<void>((resolve) => setImmediate(resolve));
    assert.equal(told[0]?.decides, false);
    assert.equal((await approvals.view(approval.id))?.status, 'pending');
    await approvals.decide(approval.id, { approve: true, by: 'cli', via: 'cli' });
    assert.equal((await call).ok, true);
  });
});
