import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { AgentRunStore, type NewRun } from '../../../src/agents/run-store.js';
import { openDatabase } from '../../../src/audit/database.js';
import { SqliteAuditStore } from '../../../src/audit/sqlite-audit-store.js';
import type { InvocationRecord } from '../../../src/audit/types.js';

async function withStore(
  fn: (store: AgentRunStore, audit: SqliteAuditStore, file: string) => void | Promise<void>,
) {
  const dir = mkdtempSync(join(tmpdir(), 'paddock-runs-'));
  const file = join(dir, 'paddock.db');
  const db = openDatabase(file);
  try {
    const audit = new SqliteAuditStore(db);
    await fn(new AgentRunStore(db, audit), audit, file);
  } finally {
    db.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

const run = (id: string, agent = 'digest'): NewRun => ({
  id,
  agent,
  trigger: 'manual',
  provider: 'anthropic',
  model: 'm',
  skills: [{ name: 'fmt', dir: '/p/.paddock/skills/fmt' }],
});

const row = (id: string, parentId: string | null, tool: string): InvocationRecord => ({
  id,
  startedAt: Date.now(),
  durationMs: 1,
  tool,
  source: 'builtin',
  caller: 'x',
  via: 'agent',
  parentId,
  input: {},
  outputBytes: 0,
  success: true,
});

describe('agent run store', () => {
  it('records a run from start to end, durable in SQLite, and lists newest first with filters', async () => {
    await withStore((store, _audit, file) => {
      const started = store.start(run('run_a'), 1000);
      assert.equal(started.status, 'running');
      assert.equal(started.pid, process.pid);
      store.progress('run_a', 3, 300, 40);
      assert.equal(
        store.finish(
          'run_a',
          { status: 'succeeded', finalAnswer: 'done', deliveries: [{ channel: 'ops', ok: true }] },
          2000,
        ),
        true,
      );
      assert.equal(
        store.finish('run_a', { status: 'failed', error: 'late' }),
        false,
        'an ended run stays ended',
      );
      store.start(run('run_b', 'other'));
      const second = openDatabase(file);
      const a = new AgentRunStore(second).get('run_a')!;
      second.close();
      assert.deepEqual(
        [
          a.status,
          a.turns,
          a.inputTokens,
          a.outputTokens,
          a.finalAnswer,
          a.endedAt,
          a.skills[0]?.name,
          a.deliveries[0]?.channel,
        ],
        ['succeeded', 3, 300, 40, 'done', 2000, 'fmt', 'ops'],
      );
      assert.deepEqual(
        store.list().map((r) => r.id),
        ['run_b', 'run_a'],
      );
      assert.deepEqual(
        store.list({ agent: 'digest' }).map((r) => r.id),
        ['run_a'],
      );
      assert.deepEqual(
        store.list({ status: 'running' }).map((r) => r.id),
        ['run_b'],
      );
      assert.equal(store.agentOf('run_b'), 'other');
      assert.throws(() => store.list({ limit: 0 }), /limit must be/);
    });
  });

  it('rejects a run row with an unknown trigger or status (schema CHECK)', async () => {
    await withStore((store) => {
      assert.throws(() => store.start({ ...run('run_x'), trigger: 'cron' as never }), /CHECK constraint/);
    });
  });

  it('marks running rows of a dead process as failed at the next start, and leaves live ones alone', async () => {
    await withStore((store, _audit, file) => {
      const dead = spawnSync(process.execPath, [
        '-e',
        'process.stdout.write(String(process.pid))',
      ]).stdout.toString();
      store.start(run('run_dead'));
      store.start(run('run_live', 'other'));
      // another connection makes one row belong to a process that has exited
      const other = openDatabase(file);
      other.prepare('UPDATE agent_runs SET pid = ? WHERE id = ?').run(Number(dead), 'run_dead');
      other.close();
      const ended = store.reconcile();
      assert.deepEqual(
        ended.map((r) => r.id),
        ['run_dead'],
      );
      assert.equal(store.get('run_dead')?.status, 'failed');
      assert.match(store.get('run_dead')?.error ?? '', /stopped before it ended/);
      assert.equal(store.get('run_live')?.status, 'running');
    });
  });

  it('claims each tick once, and never an older one', async () => {
    await withStore((store) => {
      assert.equal(store.claimTick('a', 'k', 5000), true);
      assert.equal(store.claimTick('a', 'k', 5000), false);
      assert.equal(store.claimTick('a', 'k', 4000), false);
      assert.equal(store.claimTick('a', 'k', 6000), true);
      assert.equal(store.claimTick('b', 'k', 5000), true);
      assert.equal(store.lastTick('a', 'k'), 6000);
      assert.equal(store.lastTick('a', 'other'), undefined);
    });
  });

  it("lists a run's calls with nested tool-channel calls, in order, with their depth", async () => {
    await withStore((store, audit) => {
      store.start(run('run_1'));
      audit.record(row('inv_1', 'run_1', 'save_memory'));
      audit.record(row('inv_2', 'run_1', 'run_command'));
      audit.record(row('inv_other', 'run_2', 'save_memory'));
      audit.record(row('inv_3', 'inv_2', 'github_list_pull_requests'));
      audit.record(row('inv_4', 'inv_3', 'deeper'));
      audit.record(row('inv_5', 'run_1', 'notify'));
      assert.deepEqual(
        store.calls('run_1').map((c) => [c.id, c.tool, c.depth]),
        [
          ['inv_1', 'save_memory', 1],
          ['inv_2', 'run_command', 1],
          ['inv_3', 'github_list_pull_requests', 2],
          ['inv_4', 'deeper', 3],
          ['inv_5', 'notify', 1],
        ],
      );
      assert.deepEqual(store.calls('run_none'), []);
    });
  });
});
