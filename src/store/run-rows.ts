/** What every agent run store does alike: text caps, list bounds, the wording of a lost run. */
import { PaddockError } from '../shared/errors.js';
import { truncateUtf8 } from '../shared/text.js';
import { type AgentRun, MAX_RUN_TEXT_BYTES, type RunStatus, type RunTrigger } from './agent-runs.js';

/** A run's text (input, answer, error) as stored: cut at MAX_RUN_TEXT_BYTES. */
export function runText(value: string | null | undefined): string | null {
  return value === null || value === undefined ? null : truncateUtf8(value, MAX_RUN_TEXT_BYTES);
}

/** A list's limit, checked (default 50). */
export function checkRunLimit(limit: number | undefined): number {
  const n = limit ?? 50;
  if (!Number.isInteger(n) || n < 1 || n > 1000) {
    throw new PaddockError('INVALID_ARGUMENT', `limit must be a whole number from 1 to 1000, got ${n}.`);
  }
  return n;
}

/** The error of a run whose process stopped on this host. */
export function processStoppedError(pid: number | null): string {
  return `The process running this run (pid ${pid ?? 'unknown'}) stopped before it ended; run the agent again if its work is still needed.`;
}

/** The error of a run whose server stopped renewing its lease. */
export function leaseExpiredError(owner: string | null): string {
  return `The server running this run (${owner ?? 'unknown'}) stopped renewing its lease before the run ended; run the agent again if its work is still needed.`;
}

/** Parses stored JSON, or gives `fallback` for a damaged value. */
export function parseJson<T>(value: string, fallback: T): T {
  try {
    return JSON.parse(value) as T;
  } catch {
    return fallback;
  }
}

/** A row of `agent_runs` as both databases return it. */
export interface AgentRunRow {
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
  owner: string | null;
  lease_expires_at: number | null;
  skills: string;
  deliveries: string;
}

/** The run of a row. */
export function runFromRow(r: AgentRunRow): AgentRun {
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
    owner: r.owner,
    leaseExpiresAt: r.lease_expires_at,
    skills: parseJson(r.skills, []),
    deliveries: parseJson(r.deliveries, []),
    waitingApproval: r.waiting_approval ?? null,
  };
}
