import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { policySchema } from '../../../src/config/schema.js';
import { createWhitelistSandbox } from '../../../src/policy/index.js';
import type { PaddockError } from '../../../src/shared/errors.js';
import { silentLogger } from '../../../src/shared/logger.js';
import { OWNER } from '../../../src/shared/principal.js';
import { SqliteAuditStore } from '../../../src/store/sqlite/audit-store.js';
import { openDatabase } from '../../../src/store/sqlite/database.js';
import { Gateway } from '../../../src/tools/gateway.js';
import { PermissionPolicy, type PermissionRule } from '../../../src/tools/permissions.js';
import { ToolRegistry } from '../../../src/tools/registry.js';
import type { CallerContext, Tool } from '../../../src/tools/tool.js';
import { InputValidator } from '../../../src/tools/validation.js';

function tool(name: string, overrides: Partial<Tool> = {}): Tool {
  return {
    name,
    description: `${name} tool`,
    inputSchema: {
      type: 'object',
      properties: {
        text: { type: 'string', maxLength: 5 },
        mode: { type: 'string', enum: ['a', 'b'] },
        n: { type: 'integer', minimum: 1, maximum: 3 },
      },
      additionalProperties: false,
    },
    annotations: { readOnlyHint: true },
    source: 'builtin',
    toolsets: ['builtin'],
    execute: async (input) => ({ structured: { echo: input } }),
    ...overrides,
  };
}

const attended: CallerContext = { principal: OWNER, caller: 'mcp:test', via: 'direct', attended: true };
const unattended: CallerContext = {
  principal: OWNER,
  caller: 'channel:g1.job1',
  via: 'channel',
  attended: false,
  jobId: 'g1.job1',
};

describe('gateway pipeline', () => {
  let dir: string;
  let audit: SqliteAuditStore;
  let gateway: Gateway;
  let registry: ToolRegistry;
  let closeDb: () => void;

  const build = (rules: PermissionRule[] = []) =>
    new Gateway({
      registry,
      audit,
      policy: createWhitelistSandbox(policySchema.parse({ http: { allow: ['api.example.com'] } })),
      permissions: new PermissionPolicy(rules),
      validator: new InputValidator(),
      logger: silentLogger(),
      defaultTimeoutMs: 2000,
    });

  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'paddock-gw-'));
    const db = openDatabase(join(dir, 'a.db'));
    closeDb = () => db.close();
    audit = new SqliteAuditStore(db);
    registry = new ToolRegistry();
    registry.register([
      tool('echo'),
      tool('slow', { execute: () => new Promise(() => {}) }),
      tool('boom', {
        execute: async () => {
          throw new Error('secret internals at /src/x.ts:10');
        },
      }),
      tool('fetchy', {
        execute: async (_input, ctx) => {
          const d = await ctx.policy.enforce({
            type: 'http',
            method: 'GET',
            url: 'https://evil.example.net/',
          });
          return { structured: { rule: d.rule } };
        },
      }),
      tool('up_thing', { source: 'mcp:up', toolsets: ['integrations'] }),
    ]);
    gateway = build();
  });

  after(() => {
    closeDb();
    rmSync(dir, { recursive: true, force: true });
  });

  it('runs a valid call and commits its audit row before returning', async () => {
    const outcome = await gateway.call('echo', { text: 'hi' }, attended);
    assert.equal(outcome.ok, true);
    const row = await audit.get(outcome.invocationId);
    assert.ok(row);
    assert.equal(row.success, true);
    assert.equal(row.caller, 'mcp:test');
    assert.equal(row.tool, 'echo');
  });

  it('counts string lengths in characters, so astral characters count once against maxLength', async () => {
    const five = '\u{1F600}'.repeat(5);
    assert.equal((await gateway.call('echo', { text: five }, attended)).ok, true);
    const six = await gateway.call('echo', { text: `${five}\u{1F600}` }, attended);
    assert.equal(six.ok, false);
    assert.match(
      (six as { error: PaddockError }).error.message,
      /text: must NOT have more than 5 characters/,
    );
    assert.equal((await gateway.call('echo', { text: 'abcdef' }, attended)).ok, false);
    assert.equal((await gateway.call('echo', { text: 'abcde' }, attended)).ok, true);
  });

  it('records the bytes of the result JSON as outputBytes and hands renderers the structured JSON it made', async () => {
    const outcome = await gateway.call('echo', { text: 'hé' }, attended);
    assert.ok(outcome.ok);
    assert.equal(outcome.structuredJson, JSON.stringify(outcome.result.structured));
    const row = await audit.get(outcome.invocationId);
    assert.equal(row?.outputBytes, Buffer.byteLength(JSON.stringify(outcome.result)));
  });

  it('rejects additionalProperties, maxLength, enum and minimum/maximum before execution, as tool errors with the problems listed', async () => {
    for (const input of [{ extra: 1 }, { text: 'toolong' }, { mode: 'c' }, { n: 0 }, { n: 4 }, { n: 1.5 }]) {
      const outcome = await gateway.call('echo', input, attended);
      assert.equal(outcome.ok, false, JSON.stringify(input));
      if (!outcome.ok) {
        assert.equal(outcome.protocol, false, 'a tool error the model can read, not a JSON-RPC error');
        assert.equal(outcome.error.code, 'INVALID_ARGUMENT');
        const problems = outcome.error.toJSON().problems as string[];
        assert.ok(problems.length > 0 && problems.every((p) => /: /.test(p)), JSON.stringify(problems));
        const row = await audit.get(outcome.invocationId);
        assert.equal(row?.success, false);
        assert.equal(row?.errorCode, 'INVALID_ARGUMENT');
      }
    }
  });

  it('answers an unknown tool with NOT_FOUND as a protocol error and still writes a row', async () => {
    const outcome = await gateway.call('nope', {}, attended);
    assert.equal(outcome.ok, false);
    if (!outcome.ok) {
      assert.equal(outcome.protocol, true);
      assert.equal(outcome.error.code, 'NOT_FOUND');
      assert.equal((await audit.get(outcome.invocationId))?.errorCode, 'NOT_FOUND');
    }
  });

  it('ends a call at its deadline with TIMEOUT', async () => {
    const outcome = await gateway.call('slow', {}, { ...attended, deadline: Date.now() + 50 });
    assert.equal(outcome.ok, false);
    if (!outcome.ok) assert.equal(outcome.error.code, 'TIMEOUT');
  });

  it('ends a call when the caller aborts', async () => {
    const ac = new AbortController();
    const p = gateway.call('slow', {}, { ...attended, signal: ac.signal });
    ac.abort();
    const outcome = await p;
    assert.equal(outcome.ok, false);
    if (!outcome.ok) assert.equal(outcome.error.code, 'TIMEOUT');
  });

  it('turns an unexpected throw into INTERNAL without a stack trace', async () => {
    const outcome = await gateway.call('boom', {}, attended);
    assert.equal(outcome.ok, false);
    if (!outcome.ok) {
      assert.equal(outcome.error.code, 'INTERNAL');
      assert.doesNotMatch(outcome.error.message, /\n\s+at /);
    }
  });

  it('records a policy denial as a failed row naming the rule', async () => {
    const outcome = await gateway.call('fetchy', {}, attended);
    assert.equal(outcome.ok, false);
    if (!outcome.ok) {
      assert.equal(outcome.error.code, 'POLICY_DENIED');
      const row = await audit.get(outcome.invocationId);
      assert.equal(row?.success, false);
      assert.equal(row?.errorCode, 'POLICY_DENIED');
    }
  });

  it('lets an attended caller use an ask tool and refuses it with PERMISSION_REQUIRED where nobody can approve', async () => {
    assert.equal((await gateway.call('up_thing', {}, attended)).ok, true);
    const refused = await gateway.call('up_thing', {}, unattended);
    assert.equal(refused.ok, false);
    if (!refused.ok) assert.equal(refused.error.code, 'PERMISSION_REQUIRED');
    assert.ok(gateway.listTools(attended).some((t) => t.name === 'up_thing'));
    assert.ok(!gateway.listTools(unattended).some((t) => t.name === 'up_thing'));
    assert.equal((await audit.get(refused.invocationId))?.jobId, 'g1.job1');
  });

  it('hides and refuses a denied tool', async () => {
    const g = build([{ pattern: 'ec*', permission: 'deny', origin: 'test' }]);
    assert.ok(!g.listTools(attended).some((t) => t.name === 'echo'));
    const outcome = await g.call('echo', {}, attended);
    assert.equal(outcome.ok, false);
    if (!outcome.ok) assert.equal(outcome.error.code, 'POLICY_DENIED');
  });

  it('writes exactly one row per call for 1,000 concurrent calls', async () => {
    const caller = { ...attended, caller: `mcp:burst-${Date.now()}` };
    await Promise.all(Array.from({ length: 1000 }, () => gateway.call('echo', { text: 'x' }, caller)));
    assert.equal((await audit.query({ caller: caller.caller, limit: 10_000 })).length, 1000);
  });
});

describe('tool registry', () => {
  it('fails the load on a name collision, naming both sources, and adds nothing', () => {
    const r = new ToolRegistry();
    r.register([tool('a')]);
    assert.throws(
      () => r.register([tool('b'), tool('a', { source: 'mcp:x' })]),
      (e: PaddockError) =>
        e.code === 'INVALID_ARGUMENT' && /builtin/.test(e.message) && /mcp:x/.test(e.message),
    );
    assert.equal(r.get('b'), undefined);
  });
});

describe('permission policy', () => {
  const p = new PermissionPolicy([
    { pattern: '*', permission: 'ask', origin: 't' },
    { pattern: 'github_*', permission: 'auto', origin: 't' },
    { pattern: 'github_delete_*', permission: 'deny', origin: 't' },
    { pattern: 'github_delete_branch', permission: 'ask', origin: 't' },
  ]);
  it('lets the most specific pattern win, an exact name above every glob', () => {
    assert.equal(p.resolve({ name: 'github_list', source: 'mcp:github' }).permission, 'auto');
    assert.equal(p.resolve({ name: 'github_delete_repo', source: 'mcp:github' }).permission, 'deny');
    assert.equal(p.resolve({ name: 'github_delete_branch', source: 'mcp:github' }).permission, 'ask');
    assert.equal(p.resolve({ name: 'http_get', source: 'builtin' }).permission, 'ask');
  });
  it('defaults upstream tools to ask and the rest to auto', () => {
    const d = new PermissionPolicy([]);
    assert.equal(d.resolve({ name: 'x_y', source: 'mcp:x' }).permission, 'ask');
    assert.equal(d.resolve({ name: 'http_get', source: 'builtin' }).permission, 'auto');
    assert.equal(d.resolve({ name: 'run_command', source: 'computer' }).permission, 'auto');
  });
});
