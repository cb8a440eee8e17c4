/** What the shared store suite is given, and the rows it writes. */
import type { InvocationRecord, InvocationStart } from '../../../src/audit/types.js';
import type { NewRun } from '../../../src/store/agent-runs.js';
import type { ApprovalRequest } from '../../../src/store/approvals.js';
import type { Stores } from '../../../src/store/stores.js';

/** One connection to a store database, and how to close it. */
export interface StoreHandle {
  stores: Stores;
  cleanup(): Promise<void>;
}

/**
 * Opens the stores of database `name`: the same name again opens a second connection to the
 * same database (another server sharing it); a new name is a new, empty database.
 */
export type StoreFactory = (name: string) => Promise<StoreHandle>;

let names = 0;
let ids = 0;

/** A database name no other test uses. */
export function freshName(): string {
  names++;
  return `t${process.pid}_${names}`;
}

/**
 * Runs `fn` with `count` handles on one fresh database (1: one server; 2: two servers sharing
 * it) and closes them all afterwards, pass or fail.
 */
export async function withStores(
  factory: StoreFactory,
  count: number,
  fn: (...stores: Stores[]) => Promise<void>,
): Promise<void> {
  const name = freshName();
  const handles: StoreHandle[] = [];
  try {
    for (let i = 0; i < count; i++) handles.push(await factory(name));
    await fn(...handles.map((h) => h.stores));
  } finally {
    for (const h of handles.reverse()) await h.cleanup();
  }
}

/** A unique id with a prefix. */
export function uid(prefix: string): string {
  ids++;
  return `${prefix}_${process.pid}_${ids}`;
}

/** A finished tool call. */
export function invocation(overrides: Partial<InvocationRecord> = {}): InvocationRecord {
  return {
    id: uid('inv'),
    startedAt: 1_700_000_000_000 + ids,
    durationMs: 1.25,
    tool: 'read_file',
    source: 'builtin',
    caller: 'cli',
    via: 'direct',
    input: { path: '/ws/a.txt' },
    outputBytes: 42,
    success: true,
    ...overrides,
  };
}

/** A call about to execute. */
export function started(overrides: Partial<InvocationRecord> = {}): InvocationStart {
  const { durationMs: _d, outputBytes: _o, success: _s, ...start } = invocation(overrides);
  return start;
}

/** A new agent run. */
export function newRun(overrides: Partial<NewRun> = {}): NewRun {
  return {
    id: uid('run'),
    agent: 'digest',
    trigger: 'manual',
    provider: 'anthropic',
    model: 'm',
    skills: [{ name: 'fmt', dir: '/p/.paddock/skills/fmt' }],
    ...overrides,
  };
}

/** A new approval request. */
export function approvalRequest(overrides: Partial<ApprovalRequest> = {}): ApprovalRequest {
  const now = Date.now();
  return {
    id: uid('apr'),
    invocationId: uid('inv'),
    tool: 'deploy',
    source: 'builtin',
    arguments: '{"env":"prod"}',
    argumentsSha256: 'a'.repeat(64),
    caller: 'agent:run_1',
    via: 'agent',
    parentId: null,
    runId: 'run_1',
    agent: 'digest',
    permissionRule: 'permissions.deploy',
    requestedAt: now,
    expiresAt: now + 60_000,
    ...overrides,
  };
}
