/** The agent run store: runs of agents, their leases, and the claims of schedule ticks. */
import type { StoredInvocation } from './audit.js';

/** What started a run. */
export type RunTrigger = 'manual' | 'schedule' | 'catch-up' | 'api';
/** Where a run stands. */
export type RunStatus = 'running' | 'succeeded' | 'failed' | 'limit' | 'cancelled';

/** A notification of a run's final answer. */
export interface Delivery {
  channel: string;
  ok: boolean;
  /** ISO time of the send (when ok). */
  sentAt?: string;
  error?: string;
}

/** One row of `agent_runs`. */
export interface AgentRun {
  id: string;
  agent: string;
  trigger: RunTrigger;
  /** Epoch milliseconds. */
  startedAt: number;
  endedAt: number | null;
  status: RunStatus;
  turns: number;
  inputTokens: number;
  outputTokens: number;
  finalAnswer: string | null;
  error: string | null;
  errorCode: string | null;
  input: string | null;
  provider: string;
  model: string;
  /** The scheduled time of the tick that started it (schedule and catch-up runs). */
  scheduledAt: number | null;
  /** Process that runs it (a `running` row of a dead process is marked failed at the next start). */
  pid: number | null;
  /** The server that runs it (its id for this start); null for rows written before leases. */
  owner?: string | null;
  /**
   * Epoch ms until which the owner vouches for the run; the owner renews it while the run
   * lasts, and another server marks a running run failed once it passed.
   */
  leaseExpiresAt?: number | null;
  /** Skill directories of the run (for a read-only mount inside the computer). */
  skills: { name: string; dir: string }[];
  deliveries: Delivery[];
  /** While the run waits for a person: the approval it waits for (the run shows `waiting for approval`). */
  waitingApproval?: string | null;
}

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
  /** The server running it (see {@link AgentRun.owner}). */
  owner?: string | undefined;
  /** Its first lease expiry, epoch ms (see {@link AgentRun.leaseExpiresAt}). */
  leaseExpiresAt?: number | undefined;
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

/**
 * `agent_runs` and the schedule tick claims. Every write is durable when its promise
 * resolves. A run's calls are the audit rows below it (`parent_id` = run id, and their
 * descendants), so the run store and the audit store share one database.
 */
export interface AgentRunStore {
  /** Writes a `running` row owned by this process (and `run.owner`); returns it. */
  start(run: NewRun, startedAt?: number): Promise<AgentRun>;
  /** Marks a running run as waiting for an approval (`null`: it waits no more). */
  setWaiting(id: string, approvalId: string | null): Promise<void>;
  /** Records turns and tokens of a running run. */
  progress(id: string, turns: number, inputTokens: number, outputTokens: number): Promise<void>;
  /** Ends a running run; false when it was not running (already ended, by anyone). */
  finish(id: string, end: RunEnd, endedAt?: number): Promise<boolean>;
  get(id: string): Promise<AgentRun | undefined>;
  /** The agent of a run (for memory namespaces); undefined for an unknown id. */
  agentOf(id: string): Promise<string | undefined>;
  /** Runs newest first; rejects INVALID_ARGUMENT for a limit outside 1…1000. */
  list(q?: RunQuery): Promise<AgentRun[]>;
  /** Every `running` row, oldest first (any process, any server). */
  running(): Promise<AgentRun[]>;
  /**
   * Marks `running` rows whose process is known to be gone as failed (the server stopped
   * during the run), at once rather than when the lease passes. Only a process of this host
   * can be known gone: a store shared by several hosts leaves other hosts' runs to their
   * lease. Returns the runs it ended.
   */
  reconcile(isAlive?: (pid: number) => boolean): Promise<AgentRun[]>;
  /** Moves the lease of every running run of `owner` to `leaseExpiresAt`; how many it renewed. */
  renewLeases(owner: string, leaseExpiresAt: number): Promise<number>;
  /**
   * Marks failed every running run whose lease expired before `now` (its server stopped
   * heartbeating), once: of two servers sweeping at the same moment, one ends each run.
   * Returns the runs it ended.
   */
  expireLeases(now: number): Promise<AgentRun[]>;
  /** Epoch ms of the last tick handled for a schedule, if any. */
  lastTick(agent: string, schedule: string): Promise<number | undefined>;
  setLastTick(agent: string, schedule: string, at: number): Promise<void>;
  /**
   * Records a tick atomically unless one at the same time or later was already recorded:
   * true for exactly one caller across every server sharing the store, false for the others.
   */
  claimTick(agent: string, schedule: string, at: number): Promise<boolean>;
  /**
   * The audit rows of a run in order: the calls the agent made (`parent_id` = run id) and,
   * recursively, calls made below them, up to MAX_CALL_DEPTH levels and `limit` rows
   * (default MAX_RUN_CALLS).
   */
  calls(runId: string, limit?: number): Promise<RunCall[]>;
}
