import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, it } from 'node:test';
import type Database from 'better-sqlite3';
import { ApprovalService } from '../../../src/approvals/service.js';
import { policySchema } from '../../../src/config/schema.js';
import { createWhitelistSandbox } from '../../../src/policy/index.js';
import { silentLogger } from '../../../src/shared/logger.js';
import { OWNER } from '../../../src/shared/principal.js';
import { SqliteApprovalStore } from '../../../src/store/sqlite/approval-store.js';
import { SqliteAuditStore } from '../../../src/store/sqlite/audit-store.js';
import { openDatabase } from '../../../src/store/sqlite/database.js';
import { Gateway } from '../../../src/tools/gateway.js';
import { PermissionPolicy } from '../../../src/tools/permissions.js';
import { policyVerdict } from '../../../src/tools/policy-preview.js';
import { ToolRegistry } from '../../../src/tools/registry.js';
import type { CallerContext, Tool } from '../../../src/tools/tool.js';
import { InputValidator } from '../../../src/tools/validation.js';

/** A tool that posts to a URL: it declares the http action its input leads to. */
function poster(effects: unknown[]): Tool {
  return {
    name: 'post_url',
    description: 'Posts to a URL.',
    inputSchema: {
      type: 'object',
      properties: { url: { type: 'string' } },
      required: ['url'],
      additionalProperties: false,
    },
    annotations: {},
    source: 'builtin',
    toolsets: ['builtin'],
    policyActions: (input) => [{ type: 'http', method: 'POST', url: String(input.url) }],
    execute: async (input) => {
      effects.push(input);
      return { structured: { posted: true } };
    },
  };
}

const caller: CallerContext = { caller: 'mcp:test', principal: OWNER, via: 'direct', attended: true };

describe('policy before approval', () => {
  let dir: string;
  let db: Database.Database;
  let audit: SqliteAuditStore;
  let approvals: ApprovalService;
  let gateway: Gateway;
  let effects: unknown[];
  let requested: number;

  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'paddock-policy-first-'));
    db = openDatabase(join(dir, 'a.db'));
    audit = new SqliteAuditStore(db);
    effects = [];
    requested = 0;
    approvals = await ApprovalService.open({
      store: new SqliteApprovalStore(db),
      logger: silentLogger(),
      mcp: 'gateway',
      timeoutMs: 60_000,
      maxPendingPerCaller: 10,
      describe: (name) => name,
    });
    approvals.watch({
      listener: (e) => {
        if (e.kind === 'requested') requested++;
      },
    });
    const registry = new ToolRegistry();
    registry.register([poster(effects)]);
    gateway = new Gateway({
      registry,
      audit,
      policy: createWhitelistSandbox(policySchema.parse({ http: { allow: ['api.example.com'] } })),
      permissions: new PermissionPolicy([{ pattern: 'post_url', permission: 'ask', origin: 'test' }]),
      validator: new InputValidator(),
      logger: silentLogger(),
      approvals,
    });
  });
  afterEach(async () => {
    await approvals.close();
    db.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('refuses an ask call the policy denies before anyone is asked: no approval, no effect, a denied audit row naming the rule', async () => {
    const outcome = await gateway.call('post_url', { url: 'https://evil.example.net/x' }, caller);
    assert.equal(outcome.ok, false);
    assert.equal(!outcome.ok && outcome.error.code, 'POLICY_DENIED');
    assert.match(!outcome.ok ? outcome.error.message : '', /Nobody was asked/);
    assert.equal(requested, 0);
    assert.deepEqual(await approvals.list({ pendingOnly: false, limit: 10 }), []);
    assert.deepEqual(effects, []);
    const row = (await audit.get(outcome.invocationId))!;
    assert.equal(row.success, false);
    assert.equal(row.errorCode, 'POLICY_DENIED');
    assert.ok(row.policyRule, 'the row names the rule');
  });

  it('asks a person about a call the policy allows, and the verdict names the allowing rule', async () => {
    const verdict = policyVerdict(
      poster([]),
      { url: 'https://api.example.com/v1' },
      createWhitelistSandbox(policySchema.parse({ http: { allow: ['api.example.com'] } })),
    );
    assert.equal(verdict?.allow, true);
    assert.match(verdict?.rule ?? '', /api\.example\.com/);
    const waiting = new Promise<void>((resolve) => {
      const sub = approvals.watch({
        listener: (e) => {
          if (e.kind !== 'requested') return;
          sub.dispose();
          void approvals
            .decide(e.approval.id, { approve: true, by: 'dock:owner', via: 'dock' })
            .then(() => resolve());
        },
      });
    });
    const outcome = await gateway.call('post_url', { url: 'https://api.example.com/v1' }, caller);
    await waiting;
    assert.equal(outcome.ok, true);
    assert.equal(requested, 1);
    assert.deepEqual(effects, [{ url: 'https://api.example.com/v1' }]);
  });
});
