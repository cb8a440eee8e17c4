import type BetterSqlite3 from 'better-sqlite3';
import { pidAlive } from '../../shared/pid.js';
import {
  type AgentRun,
  type AgentRunStore,
  MAX_CALL_DEPTH,
  MAX_RUN_CALLS,
  type NewRun,
  type RunCall,
  type RunEnd,
  type RunQuery,
} from '../agent-runs.js';
import { fromInvocationRow, INVOCATION_COLUMNS, type InvocationRow } from '../audit-rows.js';
import {
  type AgentRunRow,
  checkRunLimit,
  leaseExpiredError,
  processStoppedError,
  runFromRow,
  runText,
} from '../run-rows.js';
import { applyMigrations } from './migrations.js';

const TREE_SQL = `WITH RECURSIVE tree (id, depth) AS (
    SELECT id, 1 FROM tool_invocations WHERE parent_id = ?
    UNION ALL
    SELECT t.id, tree.depth + 1 FROM tool_invocations t JOIN tree ON t.parent_id = tree.id
    WHERE tree.depth < ${MAX_CALL_DEPTH}
  )
  SELECT tree.depth, ${INVOCATION_COLUMNS.split(', ')
    .map((c) => `i.${c}`)
    .join(', ')}
  FROM tree JOIN tool_invocations i ON i.id = tree.id ORDER BY i.seq LIMIT ?`;

/**
 * `agent_runs` and `agent_schedule_ticks` in Paddock's SQLite database. Every write is one
 * autocommit statement, durable when its promise resolves; `claimTick` and the lease sweep
 * are single conditional statements, so of two connections racing exactly one wins.
 */
export class SqliteAgentRunStore implements AgentRunStore {
  private readonly statements: Record<string, BetterSqlite3.Statement>;

  constructor(private readonly db: BetterSqlite3.Database) {
    applyMigrations(db);
    this.statements = {
      insert:
        db.prepare(`INSERT INTO agent_runs (id, agent, trigger, started_at, status, input, provider, model,
        scheduled_at, pid, skills, owner, lease_expires_at) VALUES (?, ?, ?, ?, 'running', ?, ?, ?, ?, ?, ?, ?, ?)`),
      waiting: db.prepare(`UPDATE agent_runs SET waiting_approval = ? WHERE id = ? AND status = 'running'`),
      progress: db.prepare(
        `UPDATE agent_runs SET turns = ?, input_tokens = ?, output_tokens = ? WHERE id = ? AND status = 'running'`,
      ),
      finish:
        db.prepare(`UPDATE agent_runs SET status = ?, ended_at = ?, final_answer = ?, error = ?, error_code = ?, waiting_approval = NULL,
        deliveries = ? WHERE id = ? AND status = 'running'`),
      get: db.prepare('SELECT * FROM agent_runs WHERE id = ?'),
      agentOf: db.prepare('SELECT agent FROM agent_runs WHERE id = ?'),
      running: db.prepare(`SELECT * FROM agent_runs WHERE status = 'running' ORDER BY seq`),
      renew: db.prepare(`UPDATE agent_runs SET lease_expires_at = ? WHERE owner = ? AND status = 'running'`),
      expired: db.prepare(
        `SELECT * FROM agent_runs WHERE status = 'running' AND lease_expires_at < ? ORDER BY seq`,
      ),
      expire:
        db.prepare(`UPDATE agent_runs SET status = 'failed', ended_at = ?, error = ?, error_code = 'INTERNAL',
        waiting_approval = NULL WHERE id = ? AND status = 'running' AND lease_expires_at < ?`),
      tickGet: db.prepare('SELECT last_tick_at FROM agent_schedule_ticks WHERE agent = ? AND schedule = ?'),
      tickSet: db.prepare(`INSERT INTO agent_schedule_ticks (agent, schedule, last_tick_at) VALUES (?, ?, ?)
        ON CONFLICT (agent, schedule) DO UPDATE SET last_tick_at = excluded.last_tick_at`),
      tickClaim: db.prepare(`INSERT INTO agent_schedule_ticks (agent, schedule, last_tick_at) VALUES (?, ?, ?)
        ON CONFLICT (agent, schedule) DO UPDATE SET last_tick_at = excluded.last_tick_at
        WHERE excluded.last_tick_at > agent_schedule_ticks.last_tick_at`),
      tree: db.prepare(TREE_SQL),
    };
  }

  async start(run: NewRun, startedAt = Date.now()): Promise<AgentRun> {
    this.statements.insert!.run(
      run.id,
      run.agent,
      run.trigger,
      startedAt,
      runText(run.input),
      run.provider,
      run.model,
      run.scheduledAt ?? null,
      process.pid,
      JSON.stringify(run.skills),
      run.owner ?? null,
      run.leaseExpiresAt ?? null,
    );
    return this.row(run.id)!;
  }

  async setWaiting(id: string, approvalId: string | null): Promise<void> {
    this.statements.waiting!.run(approvalId, id);
  }

  async progress(id: string, turns: number, inputTokens: number, outputTokens: number): Promise<void> {
    this.statements.progress!.run(turns, inputTokens, outputTokens, id);
  }

  async finish(id: string, end: RunEnd, endedAt = Date.now()): Promise<boolean> {
    return this.end(id, end, endedAt);
  }

  private end(id: string, end: RunEnd, endedAt: number): boolean {
    const info = this.statements.finish!.run(
      end.status,
      endedAt,
      runText(end.finalAnswer),
      runText(end.error),
      end.errorCode ?? null,
      JSON.stringify(end.deliveries ?? []),
      id,
    );
    return info.changes === 1;
  }

  async get(id: string): Promise<AgentRun | undefined> {
    return this.row(id);
  }

  private row(id: string): AgentRun | undefined {
    const row = this.statements.get!.get(id) as AgentRunRow | undefined;
    return row ? runFromRow(row) : undefined;
  }

  async agentOf(id: string): Promise<string | undefined> {
    return (this.statements.agentOf!.get(id) as { agent: string } | undefined)?.agent;
  }

  async list(q: RunQuery = {}): Promise<AgentRun[]> {
    const limit = checkRunLimit(q.limit);
    const where: string[] = [];
    const params: unknown[] = [];
    if (q.agent !== undefined) {
      where.push('agent = ?');
      params.push(q.agent);
    }
    if (q.status !== undefined) {
      where.push('status = ?');
      params.push(q.status);
    }
    if (q.beforeSeq !== undefined) {
      where.push('seq < ?');
      params.push(q.beforeSeq);
    }
    const sql = `SELECT * FROM agent_runs${where.length ? ` WHERE ${where.join(' AND ')}` : ''} ORDER BY seq DESC LIMIT ?`;
    return (this.db.prepare(sql).all(...params, limit) as AgentRunRow[]).map(runFromRow);
  }

  async running(): Promise<AgentRun[]> {
    return (this.statements.running!.all() as AgentRunRow[]).map(runFromRow);
  }

  /** A SQLite file is on one host, so every run's pid is one of this host's processes. */
  async reconcile(isAlive: (pid: number) => boolean = pidAlive): Promise<AgentRun[]> {
    const ended: AgentRun[] = [];
    for (const run of (this.statements.running!.all() as AgentRunRow[]).map(runFromRow)) {
      if (run.pid !== null && (run.pid === process.pid || isAlive(run.pid))) continue;
      const done = this.end(
        run.id,
        { status: 'failed', error: processStoppedError(run.pid), errorCode: 'INTERNAL' },
        Date.now(),
      );
      if (done) ended.push(this.row(run.id)!);
    }
    return ended;
  }

  async renewLeases(owner: string, leaseExpiresAt: number): Promise<number> {
    return this.statements.renew!.run(Math.floor(leaseExpiresAt), owner).changes;
  }

  async expireLeases(now: number): Promise<AgentRun[]> {
    const ended: AgentRun[] = [];
    for (const row of this.statements.expired!.all(now) as AgentRunRow[]) {
      const changes = this.statements.expire!.run(now, leaseExpiredError(row.owner), row.id, now).changes;
      if (changes === 1) ended.push(this.row(row.id)!);
    }
    return ended;
  }

  async lastTick(agent: string, schedule: string): Promise<number | undefined> {
    return (this.statements.tickGet!.get(agent, schedule) as { last_tick_at: number } | undefined)
      ?.last_tick_at;
  }

  async setLastTick(agent: string, schedule: string, at: number): Promise<void> {
    this.statements.tickSet!.run(agent, schedule, Math.floor(at));
  }

  async claimTick(agent: string, schedule: string, at: number): Promise<boolean> {
    return this.statements.tickClaim!.run(agent, schedule, Math.floor(at)).changes === 1;
  }

  async calls(runId: string, limit = MAX_RUN_CALLS): Promise<RunCall[]> {
    const rows = this.statements.tree!.all(runId, limit) as (InvocationRow & { depth: number })[];
    return rows.map((r) => ({ ...fromInvocationRow(r), depth: r.depth }));
  }
}
