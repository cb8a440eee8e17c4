/**
 * Property test of the MCP Apps boundary in the gateway: a tool only a view calls (`appOnly`) is
 * listed to, and runs for, a caller that declared MCP Apps and no one else, whatever the caller's
 * filter, its way in (`via`) or the permission rules. Seeded callers and tool sets are checked
 * against a reference model; every call, refused or not, has its audit row, and a refused call
 * never reaches the tool.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { policySchema } from '../../../src/config/schema.js';
import { createWhitelistSandbox } from '../../../src/policy/index.js';
import { silentLogger } from '../../../src/shared/logger.js';
import { OWNER } from '../../../src/shared/principal.js';
import type { Via } from '../../../src/shared/via.js';
import { SqliteAuditStore } from '../../../src/store/sqlite/audit-store.js';
import { openDatabase } from '../../../src/store/sqlite/database.js';
import { Gateway } from '../../../src/tools/gateway.js';
import { PermissionPolicy } from '../../../src/tools/permissions.js';
import { ToolRegistry } from '../../../src/tools/registry.js';
import type { CallerContext, Permission, Tool } from '../../../src/tools/tool.js';
import { InputValidator } from '../../../src/tools/validation.js';
import { random } from '../../helpers/fuzz.js';

const SEED = 0x33a9;
const ROUNDS = 300;
const VIAS: Via[] = ['direct', 'channel', 'agent', 'schedule', 'webmcp', 'app'];

describe('tools only an MCP App view calls', () => {
  let dir: string;
  let audit: SqliteAuditStore;
  let closeDb: () => void;

  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'paddock-app-only-'));
    const db = openDatabase(join(dir, 'a.db'));
    closeDb = () => db.close();
    audit = new SqliteAuditStore(db);
  });
  after(() => {
    closeDb();
    rmSync(dir, { recursive: true, force: true });
  });

  it(`are reachable by a caller that declared MCP Apps only (${ROUNDS} seeded cases, seed ${SEED})`, async () => {
    const rnd = random(SEED);
    const pick = <T>(items: readonly T[]): T => items[Math.floor(rnd() * items.length)] as T;
    for (let round = 0; round < ROUNDS; round++) {
      const ran = new Map<string, number>();
      const tools: Tool[] = [];
      const permissions = new Map<string, Permission>();
      for (let i = 0; i < 1 + Math.floor(rnd() * 5); i++) {
        const name = `t${round}_${i}`;
        permissions.set(name, pick(['auto', 'auto', 'deny'] as const));
        tools.push({
          name,
          description: name,
          inputSchema: { type: 'object', properties: {}, additionalProperties: false },
          annotations: { readOnlyHint: true },
          source: 'computer',
          toolsets: ['computer'],
          execute: async () => {
            ran.set(name, (ran.get(name) ?? 0) + 1);
            return { structured: { ok: true } };
          },
          ...(rnd() < 0.5 ? { appOnly: true } : {}),
        });
      }
      const registry = new ToolRegistry();
      registry.register(tools);
      const gateway = new Gateway({
        registry,
        audit,
        policy: createWhitelistSandbox(policySchema.parse({})),
        permissions: new PermissionPolicy(
          [...permissions].map(([pattern, permission]) => ({ pattern, permission, origin: 'test' })),
        ),
        validator: new InputValidator(),
        logger: silentLogger(),
        defaultTimeoutMs: 2000,
      });
      const allowed = new Set(tools.filter(() => rnd() < 0.8).map((t) => t.name));
      const apps = pick([true, false, undefined] as const);
      const caller: CallerContext = {
        principal: OWNER,
        caller: `mcp:case${round}`,
        via: pick(VIAS),
        attended: rnd() < 0.5,
        ...(apps === undefined ? {} : { apps }),
        ...(rnd() < 0.5 ? { allowTool: (name: string) => allowed.has(name) } : {}),
      };
      const filtered = caller.allowTool !== undefined;
      const reachable = (t: Tool) => (!t.appOnly || apps === true) && (!filtered || allowed.has(t.name));
      const expected = tools
        .filter((t) => reachable(t) && permissions.get(t.name) === 'auto')
        .map((t) => t.name);
      const listed = gateway.listTools(caller).map((t) => t.name);
      assert.deepEqual(
        listed.sort(),
        expected.sort(),
        `round ${round}: ${JSON.stringify({ apps, filtered })}`,
      );
      for (const t of tools) {
        const outcome = await gateway.call(t.name, {}, caller);
        const row = await audit.get(outcome.invocationId);
        assert.ok(row, `round ${round}: ${t.name} has its audit row`);
        if (!reachable(t)) {
          assert.equal(outcome.ok, false, `round ${round}: ${t.name} unreachable`);
          assert.equal(outcome.ok ? '' : outcome.error.code, 'NOT_FOUND');
          assert.equal(ran.get(t.name) ?? 0, 0, `round ${round}: ${t.name} never ran`);
        } else if (permissions.get(t.name) === 'auto') {
          assert.equal(outcome.ok, true, `round ${round}: ${t.name} runs`);
        } else {
          assert.equal(outcome.ok, false);
          assert.equal(ran.get(t.name) ?? 0, 0);
        }
      }
    }
  });
});
