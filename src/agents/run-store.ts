import type BetterSqlite3 from 'better-sqlite3';
import { applyMigrations } from '../audit/migrations.js';
import type { AuditStore, StoredInvocation } from '../audit/types.js';
import { PaddockError } from '../shared/errors.js';
import { pidAlive } from '../shared/pid.js';
import { truncateUtf8 } from '../shared/text.js';
import type { AgentRun, Delivery, RunStatus, RunTrigger } from './types.js';

/** Largest final answer, input and error text stored, in UTF-8 bytes. */
export const MAX_RUN_TEXT_BYTES = 64 * 1024;
/** Deepest nesting followed when listing a run's calls (run → run_command → channel call …). */
export const MAX_CALL_DEPTH = 8;
/** Most calls listed for one run. */
export const MAX_RUN_CALLS = 10_000;

/** What a new run row holds. */
export interface NewRun {
  id: string;
  agent: string;
  trigger: RunTrigger;
  input?: string | undefined;
  provider: string;
  model: string;
  scheduledAt?: number | undefined;
  skills: { name: string; dir: string }[];
}

/** How a run ended. */
export interface RunEnd {
  status: Exclude<RunStatus, 'running'>;
  finalAnswer?: string | null;
  error?: string | null;
  errorCode?: string | null;
  deliveries?: Delivery[];
}

/** Filters of {@link AgentRunStore.list}; newest first. */
export interface RunQuery {
  agent?: string;
  status?: RunStatus;
  /** Rows older than this seq (paging). */
  beforeSeq?: number;
  /** Default 50, at most 1,000. */
  limit?: number;
}

/** A call of a run, with how deep below the run it was made (1 = by the agent itself). */
export interface RunCall extends StoredInvocation {
  depth: number;
}

interface Row {
  seq: number;
  id: string;
  agent: string;
  trigger: string;
  started_at: number;
  ended_at: number | null;
  status: string;
  waiting_approval: string | null;
  turns: number;
  input_tokens: number;
  output_tokens: number;
  final_answer: string | null;
  error: string | null;
  error_code: string | null;
  input: string | null;
  provider: string;
  model: string;
  scheduled_at: number | null;
  pid: number | null;
  skills: string;
  deliveries: string;
}

const text = (value: string | null | undefined) =>
  value === null || value === undefined ? null : truncateUtf8(value, MAX_RUN_TEXT_BYTES);

/**
 * `agent_runs` and `agent_schedule_ticks` in Paddock's SQLite database (migration 4). Every
 * write is one autocommit statement, durable when it returns. A run's calls are the audit rows
 * below it (`parent_id` = run id, and their descendants).
 */
export class AgentRunStore {
  private readonly statements: Record<string, BetterSqlite3.Statement>;

  constructor(
    private readonly db: BetterSqlite3.Database,
    private readonly audit?: AuditStore,
  ) {
    applyMigrations(db);
    this.statements = {
      insert:
        db.prepare(`INSERT INTO agent_runs (id, agent, trigger, started_at, status, input, provider, model,
        scheduled_at, pid, skills) VALUES (?, ?, ?, ?, 'running', ?, ?, ?, ?, ?, ?)`),
      progress: db.prepare(
        `UPDATE agent_runs SET turns = ?, input_tokens = ?, output_tokens = ? WHERE id = ? AND status = 'running'`,
      ),
      finish:
        db.prepare(`UPDATE agent_runs SET status = ?, ended_at = ?, final_answer = ?, error = ?, error_code = ?, waiting_approval = NULL,
        deliveries = ? WHERE id = ? AND status = 'running'`),
      get: db.prepare('SELECT * FROM agent_runs WHERE id = ?'),
      agentOf: db.prepare('SELECT agent FROM agent_runs WHERE id = ?'),
      running: db.prepare(`SELECT * FROM agent_runs WHERE status = 'running' ORDER BY seq`),
      tickGet: db.prepare('SELECT last_tick_at FROM agent_schedule_ticks WHERE agent = ? AND schedule = ?'),
      tickSet: db.prepare(`INSERT INTO agent_schedule_ticks (agent, schedule, last_tick_at) VALUES (?, ?, ?)
        ON CONFLICT (agent, schedule) DO UPDATE SET last_tick_at = excluded.last_tick_at`),
      tickClaim: db.prepare(`INSERT INTO agent_schedule_ticks (agent, schedule, last_tick_at) VALUES (?, ?, ?)
        ON CONFLICT (agent, schedule) DO UPDATE SET last_tick_at = excluded.last_tick_at
        WHERE excluded.last_tick_at > agent_schedule_ticks.last_tick_at`),
      tree: db.prepare(`WITH RECURSIVE tree (id, depth) AS (
          SELECT id, 1 FROM tool_invocations WHERE parent_id = ?
          UNION ALL
          SELECT t.id, tree.depth + 1 FROM tool_invocations t JOIN tree ON t.parent_id = tree.id
          WHERE tree.depth < ${MAX_CALL_DEPTH}
        )
        SELECT tree.id, tree.depth FROM tree JOIN tool_invocations i ON i.id = tree.id ORDER BY i.seq LIMIT ?`),
    };
  }

  /** Writes a `running` row owned by this process; returns it. */
  start(run: NewRun, startedAt = Date.now()): AgentRun {
    this.statements.insert!.run(
      run.id,
      run.agent,
      run.trigger,
      startedAt,
      text(run.input),
      run.provider,
      run.model,
      run.scheduledAt ?? null,
      process.pid,
      JSON.stringify(run.skills),
    );
    return this.get(run.id)!;
  }

  /** Records turns and tokens of a running run. */
  /** Marks a running run as waiting for an approval (`null`: it waits no more). */
  setWaiting(id: string, approvalId: string | null): void {
    this.db
      .prepare(`UPDATE agent_runs SET waiting_approval = ? WHERE id = ? AND status = 'running'`)
      .run(approvalId, id);
  }

  progress(id: string, turns: number, inputTokens: number, outputTokens: number): void {
    this.statements.progress!.run(turns, inputTokens, outputTokens, id);
  }

  /** Ends a running run; false when it was not running (already ended). */
  finish(id: string, end: RunEnd, endedAt = Date.now()): boolean {
    const info = this.statements.finish!.run(
      end.status,
      endedAt,
      text(end.finalAnswer),
      text(end.error),
      end.errorCode ?? null,
      JSON.stringify(end.deliveries ?? []),
      id,
    );
    return info.changes === 1;
  }

  get(id: string): AgentRun | undefined {
    const row = this.statements.get!.get(id) as Row | undefined;
    return row ? fromRow(row) : undefined;
  }

  /** The agent of a run (for memory namespaces); undefined for an unknown id. */
  agentOf(id: string): string | undefined {
    return (this.statements.agentOf!.get(id) as { agent: string } | undefined)?.agent;
  }

  /** Runs newest first. */
  list(q: RunQuery = {}): AgentRun[] {
    const limit = q.limit ?? 50;
    if (!Number.isInteger(limit) || limit < 1 || limit > 1000) {
      throw new PaddockError(
        'INVALID_ARGUMENT',
        `limit must be a whole number from 1 to 1000, got ${limit}.`,
      );
    }
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
    return (this.db.prepare(sql).all(...params, limit) as Row[]).map(fromRow);
  }

  /** Every `running` row, oldest first (any process). */
  running(): AgentRun[] {
    return (this.statements.running!.all() as Row[]).map(fromRow);
  }

  /**
   * Marks `running` rows of processes that no longer exist as failed (the server stopped during
   * the run). Returns the runs it ended.
   */
  reconcile(isAlive: (pid: number) => boolean = pidAlive): AgentRun[] {
    const ended: AgentRun[] = [];
    for (const run of this.running()) {
      if (run.pid !== null && (run.pid === process.pid || isAlive(run.pid))) continue;
      const done = this.finish(run.id, {
        status: 'failed',
        error: `The process running this run (pid ${run.pid ?? 'unknown'}) stopped before it ended; run the agent again if its work is still needed.`,
        errorCode: 'INTERNAL',
      });
      if (done) ended.push(this.get(run.id)!);
    }
    return ended;
  }

  /** Epoch ms of the last tick handled for a schedule, if any. */
  lastTick(agent: string, schedule: string): number | undefined {
    return (this.statements.tickGet!.get(agent, schedule) as { last_tick_at: number } | undefined)
      ?.last_tick_at;
  }

  setLastTick(agent: string, schedule: string, at: number): void {
    this.statements.tickSet!.run(agent, schedule, Math.floor(at));
  }

  /**
   * Records a tick atomically unless one at the same time or later was already recorded:
   * true for the one caller that claims it, false for any other.
   */
  claimTick(agent: string, schedule: string, at: number): boolean {
    return this.statements.tickClaim!.run(agent, schedule, Math.floor(at)).changes === 1;
  }

  /**
   * The audit rows of a run in order: the calls the agent made (`parent_id` = run id) and,
   * recursively, calls made below them (tool-channel calls of a `run_command` job …), up to
   * MAX_CALL_DEPTH levels and MAX_RUN_CALLS rows.
   */
  calls(runId: string, limit = MAX_RUN_CALLS): RunCall[] {
    if (!this.audit)
      throw new PaddockError(
        'INTERNAL',
        'The run store was built without an audit store; pass one to list calls.',
      );
    const ids = this.statements.tree!.all(runId, limit) as { id: string; depth: number }[];
    const out: RunCall[] = [];
    for (const { id, depth } of ids) {
      const row = this.audit.get(id);
      if (row) out.push({ ...row, depth });
    }
    return out;
  }
}

function parseJson<T>(value: string, fallback: T): T {
  try {
    return JSON.parse(value) as T;
  } catch {
    return fallback;
  }
}

function fromRow(r: Row): AgentRun {
  return {
    id: r.id,
    agent: r.agent,
    trigger: r.trigger as RunTrigger,
    startedAt: r.started_at,
    endedAt: r.ended_at,
    status: r.status as RunStatus,
    turns: r.turns,
    inputTokens: r.input_tokens,
    outputTokens: r.output_tokens,
    finalAnswer: r.final_answer,
    error: r.error,
    errorCode: r.error_code,
    input: r.input,
    provider: r.provider,
    model: r.model,
    scheduledAt: r.scheduled_at,
    pid: r.pid,
    skills: parseJson(r.skills, []),
    deliveries: parseJson(r.deliveries, []),
    waitingApproval: r.waiting_approval ?? null,
  };
}

export { pidAlive };
