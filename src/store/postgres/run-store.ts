/**
 * Agent runs and schedule tick claims on PostgreSQL. Every write is one autocommit statement;
 * the conditional ones (finish, lease expiry, tick claim) rely on PostgreSQL's row locks, so of
 * two servers racing for the same row exactly one changes it.
 */
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
import type { PgDatabase } from './database.js';

const STORE = 'agent run';

const FINISH = `UPDATE agent_runs SET status = $1, ended_at = $2, final_answer = $3, error = $4, error_code = $5,
  waiting_approval = NULL, deliveries = $6 WHERE id = $7 AND status = 'running' RETURNING *`;

const TREE = `WITH RECURSIVE tree (id, depth) AS (
    SELECT id, 1 FROM tool_invocations WHERE parent_id = $1
    UNION ALL
    SELECT t.id, tree.depth + 1 FROM tool_invocations t JOIN tree ON t.parent_id = tree.id
    WHERE tree.depth < ${MAX_CALL_DEPTH}
  )
  SELECT ${INVOCATION_COLUMNS.split(', ')
    .map((c) => `i.${c}`)
    .join(', ')}, tree.depth FROM tree JOIN tool_invocations i ON i.id = tree.id ORDER BY i.seq LIMIT $2`;

/** `agent_runs` and `agent_schedule_ticks` on PostgreSQL. */
export class PgAgentRunStore implements AgentRunStore {
  constructor(private readonly db: PgDatabase) {}

  async start(run: NewRun, startedAt = Date.now()): Promise<AgentRun> {
    const rows = await this.db.rows<AgentRunRow>(
      STORE,
      `INSERT INTO agent_runs (id, agent, trigger, started_at, status, input, provider, model, scheduled_at,
        pid, host, skills, owner, lease_expires_at)
       VALUES ($1, $2, $3, $4, 'running', $5, $6, $7, $8, $9, $10, $11, $12, $13) RETURNING *`,
      [
        run.id,
        run.agent,
        run.trigger,
        startedAt,
        runText(run.input),
        run.provider,
        run.model,
        run.scheduledAt ?? null,
        process.pid,
        this.db.host,
        JSON.stringify(run.skills),
        run.owner ?? null,
        run.leaseExpiresAt === undefined ? null : Math.floor(run.leaseExpiresAt),
      ],
    );
    return runFromRow(rows[0] as AgentRunRow);
  }

  async setWaiting(id: string, approvalId: string | null): Promise<void> {
    await this.db.run(
      STORE,
      `UPDATE agent_runs SET waiting_approval = $1 WHERE id = $2 AND status = 'running'`,
      [approvalId, id],
    );
  }

  async progress(id: string, turns: number, inputTokens: number, outputTokens: number): Promise<void> {
    await this.db.run(
      STORE,
      `UPDATE agent_runs SET turns = $1, input_tokens = $2, output_tokens = $3 WHERE id = $4 AND status = 'running'`,
      [turns, inputTokens, outputTokens, id],
    );
  }

  async finish(id: string, end: RunEnd, endedAt = Date.now()): Promise<boolean> {
    return (await this.end(id, end, endedAt)) !== undefined;
  }

  private async end(id: string, end: RunEnd, endedAt: number): Promise<AgentRun | undefined> {
    const rows = await this.db.rows<AgentRunRow>(STORE, FINISH, [
      end.status,
      endedAt,
      runText(end.finalAnswer),
      runText(end.error),
      end.errorCode ?? null,
      JSON.stringify(end.deliveries ?? []),
      id,
    ]);
    return rows[0] ? runFromRow(rows[0]) : undefined;
  }

  async get(id: string): Promise<AgentRun | undefined> {
    const rows = await this.db.rows<AgentRunRow>(STORE, 'SELECT * FROM agent_runs WHERE id = $1', [id]);
    return rows[0] ? runFromRow(rows[0]) : undefined;
  }

  async agentOf(id: string): Promise<string | undefined> {
    const rows = await this.db.rows<{ agent: string }>(STORE, 'SELECT agent FROM agent_runs WHERE id = $1', [
      id,
    ]);
    return rows[0]?.agent;
  }

  async list(q: RunQuery = {}): Promise<AgentRun[]> {
    const limit = checkRunLimit(q.limit);
    const where: string[] = [];
    const params: unknown[] = [];
    const add = (column: string, value: unknown, op = '=') => {
      params.push(value);
      where.push(`${column} ${op} $${params.length}`);
    };
    if (q.agent !== undefined) add('agent', q.agent);
    if (q.status !== undefined) add('status', q.status);
    if (q.beforeSeq !== undefined) add('seq', q.beforeSeq, '<');
    params.push(limit);
    const sql = `SELECT * FROM agent_runs${where.length ? ` WHERE ${where.join(' AND ')}` : ''} ORDER BY seq DESC LIMIT $${params.length}`;
    return (await this.db.rows<AgentRunRow>(STORE, sql, params)).map(runFromRow);
  }

  async running(): Promise<AgentRun[]> {
    return (
      await this.db.rows<AgentRunRow>(STORE, `SELECT * FROM agent_runs WHERE status = 'running' ORDER BY seq`)
    ).map(runFromRow);
  }

  /** Runs of this host's dead processes only: another host's pid means nothing here. */
  async reconcile(isAlive: (pid: number) => boolean = pidAlive): Promise<AgentRun[]> {
    const mine = await this.db.rows<AgentRunRow>(
      STORE,
      `SELECT * FROM agent_runs WHERE status = 'running' AND host = $1 ORDER BY seq`,
      [this.db.host],
    );
    const ended: AgentRun[] = [];
    for (const run of mine.map(runFromRow)) {
      if (run.pid !== null && (run.pid === process.pid || isAlive(run.pid))) continue;
      const done = await this.end(
        run.id,
        { status: 'failed', error: processStoppedError(run.pid), errorCode: 'INTERNAL' },
        Date.now(),
      );
      if (done) ended.push(done);
    }
    return ended;
  }

  async renewLeases(owner: string, leaseExpiresAt: number): Promise<number> {
    const result = await this.db.run(
      STORE,
      `UPDATE agent_runs SET lease_expires_at = $1 WHERE owner = $2 AND status = 'running'`,
      [Math.floor(leaseExpiresAt), owner],
    );
    return result.rowCount ?? 0;
  }

  /** Each end is conditional on the lease still being past: of two servers sweeping, one ends a run. */
  async expireLeases(now: number): Promise<AgentRun[]> {
    const at = Math.floor(now);
    const expired = await this.db.rows<AgentRunRow>(
      STORE,
      `SELECT * FROM agent_runs WHERE status = 'running' AND lease_expires_at < $1 ORDER BY seq`,
      [at],
    );
    const ended: AgentRun[] = [];
    for (const row of expired) {
      const rows = await this.db.rows<AgentRunRow>(
        STORE,
        `UPDATE agent_runs SET status = 'failed', ended_at = $1, error = $2, error_code = 'INTERNAL',
           waiting_approval = NULL WHERE id = $3 AND status = 'running' AND lease_expires_at < $1 RETURNING *`,
        [at, leaseExpiredError(row.owner), row.id],
      );
      if (rows[0]) ended.push(runFromRow(rows[0]));
    }
    return ended;
  }

  async lastTick(agent: string, schedule: string): Promise<number | undefined> {
    const rows = await this.db.rows<{ last_tick_at: number }>(
      STORE,
      'SELECT last_tick_at FROM agent_schedule_ticks WHERE agent = $1 AND schedule = $2',
      [agent, schedule],
    );
    return rows[0]?.last_tick_at;
  }

  async setLastTick(agent: string, schedule: string, at: number): Promise<void> {
    await this.db.run(
      STORE,
      `INSERT INTO agent_schedule_ticks (agent, schedule, last_tick_at) VALUES ($1, $2, $3)
       ON CONFLICT (agent, schedule) DO UPDATE SET last_tick_at = excluded.last_tick_at`,
      [agent, schedule, Math.floor(at)],
    );
  }

  /**
   * The unique key (agent, schedule) makes the claim one row: the first server inserts it or
   * moves it forward; a second server's statement waits on the row lock, then finds the tick
   * taken (the condition is checked again on the new row) and changes nothing.
   */
  async claimTick(agent: string, schedule: string, at: number): Promise<boolean> {
    const result = await this.db.run(
      STORE,
      `INSERT INTO agent_schedule_ticks (agent, schedule, last_tick_at) VALUES ($1, $2, $3)
       ON CONFLICT (agent, schedule) DO UPDATE SET last_tick_at = excluded.last_tick_at
       WHERE excluded.last_tick_at > agent_schedule_ticks.last_tick_at`,
      [agent, schedule, Math.floor(at)],
    );
    return result.rowCount === 1;
  }

  async calls(runId: string, limit = MAX_RUN_CALLS): Promise<RunCall[]> {
    const rows = await this.db.rows<InvocationRow & { depth: number }>(STORE, TREE, [runId, limit]);
    return rows.map((r) => ({ ...fromInvocationRow(r), depth: r.depth }));
  }
}
