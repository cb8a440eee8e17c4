import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { StoredInvocation } from '../../../src/audit/types.js';
import type { Sandbox } from '../../../src/policy/types.js';
import { silentLogger } from '../../../src/shared/logger.js';
import { OWNER } from '../../../src/shared/principal.js';
import { SqliteAuditStore } from '../../../src/store/sqlite/audit-store.js';
import { openDatabase } from '../../../src/store/sqlite/database.js';
import { type CallOutcome, Gateway } from '../../../src/tools/gateway.js';
import { PermissionPolicy } from '../../../src/tools/permissions.js';
import { ToolRegistry } from '../../../src/tools/registry.js';
import type { CallerContext, Tool } from '../../../src/tools/tool.js';
import { InputValidator } from '../../../src/tools/validation.js';

/** The real pipeline (registry, validation, policy, SQLite audit) around a set of tools. */
export interface Harness {
  dir: string;
  gateway: Gateway;
  audit: SqliteAuditStore;
  /** Calls a tool as `caller` (default an MCP session) and returns the outcome and its audit row. */
  call(
    name: string,
    input: unknown,
    caller?: Partial<CallerContext>,
  ): Promise<{ outcome: CallOutcome; row: StoredInvocation }>;
  close(): Promise<void>;
}

/** Builds a harness in a fresh temp dir; `tools` receives the dir (for stores that live in it). */
export async function createHarness(policy: Sandbox, tools: (dir: string) => Tool[]): Promise<Harness> {
  const dir = await mkdtemp(join(tmpdir(), 'paddock-builtin-'));
  const db = openDatabase(join(dir, 'audit.db'));
  const audit = new SqliteAuditStore(db);
  const registry = new ToolRegistry();
  registry.register(tools(dir));
  const gateway = new Gateway({
    registry,
    audit,
    policy,
    permissions: new PermissionPolicy([]),
    validator: new InputValidator(),
    logger: silentLogger(),
  });
  return {
    dir,
    gateway,
    audit,
    async call(name, input, caller = {}) {
      const outcome = await gateway.call(name, input, {
        caller: 'mcp:s1',
        principal: OWNER,
        via: 'direct',
        attended: true,
        ...caller,
      } as CallerContext);
      const row = await audit.get(outcome.invocationId);
      if (!row) throw new Error(`no audit row for ${outcome.invocationId}`);
      return { outcome, row };
    },
    async close() {
      db.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/** The structured result of a successful outcome (fails the test otherwise). */
export function structured(outcome: CallOutcome): Record<string, unknown> {
  if (!outcome.ok) throw new Error(`expected success, got ${outcome.error.code}: ${outcome.error.message}`);
  return outcome.result.structured ?? {};
}

/** The error code of a failed outcome (fails the test otherwise). */
export function errorCode(outcome: CallOutcome): string {
  if (outcome.ok) throw new Error(`expected a failure, got ${JSON.stringify(outcome.result)}`);
  return outcome.error.code;
}
