/**
 * What every audit store does before and around a write, so SQLite and PostgreSQL store the
 * same row: inputs redacted and cut to a preview (the whole input kept apart by digest),
 * error messages redacted and cut, query bounds checked, errors worded the same.
 */
import { createHash } from 'node:crypto';
import { PaddockError } from '../shared/errors.js';
import { MAX_INPUT_BYTES, redactedJson, redactSecrets, redactText } from '../shared/redact.js';
import { truncateUtf8 } from '../shared/text.js';
import type { InvocationEnd, InvocationRecord, InvocationState, StoredInvocation, Via } from './audit.js';
import type { ChainedInvocation } from './audit-chain.js';

/** Rows returned by a query when no limit is given. */
export const DEFAULT_QUERY_LIMIT = 100;
/** Largest `limit` a query accepts; page further with `afterSeq` / `beforeSeq`. */
export const MAX_QUERY_LIMIT = 10_000;

/** Caps of what an audit row keeps. */
export interface AuditRowLimits {
  /** Cap for the stored input text, in UTF-8 bytes. Default 4 KiB. */
  maxInputBytes?: number;
  /** Cap for the stored error message, in UTF-8 bytes. Default 4 KiB. */
  maxErrorMessageBytes?: number;
}

/** A row ready to write: the stored shape without its sequences, and the whole input when cut. */
export interface PreparedInvocation extends Omit<StoredInvocation, 'seq' | 'endSeq'> {
  /** The whole redacted input when `input` is a cut preview (stored under `inputSha256`). */
  fullInput: string | null;
}

/**
 * The values both stores insert first, in column order: id … policy_rule, state, owner_pid,
 * input_sha256, approval_id, approver, principal, checkpoint_id. `success` as the store's driver wants it (SQLite has
 * no booleans).
 */
export function insertValues(
  stored: Omit<PreparedInvocation, 'fullInput'>,
  state: InvocationState,
  success: boolean | number,
): unknown[] {
  return [
    stored.id,
    stored.startedAt,
    stored.durationMs,
    stored.tool,
    stored.source,
    stored.caller,
    stored.via,
    stored.parentId,
    stored.generation,
    stored.jobId,
    stored.input,
    stored.outputBytes,
    stored.sentBytes,
    success,
    stored.errorCode,
    stored.errorMessage,
    stored.policyRule,
    state,
    process.pid,
    stored.inputSha256,
    stored.approvalId,
    stored.approver,
    stored.principal,
    stored.checkpointId ?? null,
  ];
}

/** Redacts and cuts `row` for storage in `state`. */
export function prepareInvocation(
  row: InvocationRecord,
  state: InvocationState,
  limits: AuditRowLimits = {},
): PreparedInvocation {
  const json = safeJson(row.input);
  const preview = truncateUtf8(json, limits.maxInputBytes ?? MAX_INPUT_BYTES);
  const cut = preview !== json;
  return {
    id: row.id,
    startedAt: row.startedAt,
    durationMs: row.durationMs,
    tool: row.tool,
    source: row.source,
    caller: row.caller,
    via: row.via,
    parentId: row.parentId ?? null,
    generation: row.generation ?? null,
    jobId: row.jobId ?? null,
    input: preview,
    inputSha256: cut ? createHash('sha256').update(json).digest('hex') : null,
    fullInput: cut ? json : null,
    outputBytes: row.outputBytes,
    sentBytes: row.sentBytes ?? null,
    success: row.success,
    errorCode: row.errorCode ?? null,
    errorMessage: row.errorMessage == null ? null : storedMessage(row.errorMessage, limits),
    policyRule: row.policyRule ?? null,
    approvalId: row.approvalId ?? null,
    approver: row.approver ?? null,
    principal: row.principal ?? null,
    checkpointId: row.checkpointId ?? null,
    state,
  };
}

/** An error message as stored: redacted by shape, then cut. */
export function storedMessage(text: string, limits: AuditRowLimits = {}): string {
  return truncateUtf8(redactText(text, redactSecrets), limits.maxErrorMessageBytes ?? MAX_INPUT_BYTES);
}

/** Redacts and serialises an input; one whose getters or `toJSON` throw is stored as a placeholder. */
function safeJson(input: unknown): string {
  try {
    return redactedJson(input);
  } catch {
    return JSON.stringify('[unserializable input]');
  }
}

/**
 * The ended row of call `from` (running) after `end`; `errorMessage` is the end's message as
 * stored (see storedMessage). Lineage the end does not name stays what the running row said.
 */
export function endedInvocation(
  from: StoredInvocation,
  end: InvocationEnd,
  errorMessage: string | null,
): StoredInvocation {
  return {
    ...from,
    state: 'ended',
    durationMs: end.durationMs,
    outputBytes: end.outputBytes,
    sentBytes: end.sentBytes ?? null,
    success: end.success,
    errorCode: end.errorCode ?? null,
    errorMessage,
    policyRule: end.policyRule ?? null,
    generation: end.generation ?? from.generation ?? null,
    jobId: end.jobId ?? from.jobId ?? null,
  };
}

/** The error message of a `running` row that its process left (the server stopped during the call). */
export function interruptedMessage(pid: number | null): string {
  return `The server (pid ${pid ?? 'unknown'}) stopped before this call ended; its effects may have happened in part. Check the computer's state before retrying.`;
}

/** `complete` of a row that is not running. */
export function notRunning(id: string): PaddockError {
  return new PaddockError(
    'NOT_FOUND',
    `No running audit row "${id}" to complete; begin the call before completing it, and complete it once.`,
    { id },
  );
}

/** A failed write: a duplicate id is the caller's error, anything else the store's. */
export function auditWriteError(id: string, reason: string, duplicateId: boolean): PaddockError {
  if (duplicateId) {
    return new PaddockError(
      'INVALID_ARGUMENT',
      `An audit row with id "${id}" already exists; give every invocation a fresh id.`,
      { id },
    );
  }
  return new PaddockError(
    'INTERNAL',
    `Could not write the audit row: ${reason}. The audit store is unavailable: check that the database is reachable, writable and has free space, then retry.`,
  );
}

/** A query's row limit, checked (default {@link DEFAULT_QUERY_LIMIT}). */
export function checkLimit(limit: number | undefined): number {
  if (limit === undefined) return DEFAULT_QUERY_LIMIT;
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_QUERY_LIMIT) {
    throw new PaddockError(
      'INVALID_ARGUMENT',
      `limit must be a whole number from 1 to ${MAX_QUERY_LIMIT}, got ${limit}. Ask for fewer rows and page with afterSeq.`,
      { argument: 'limit' },
    );
  }
  return limit;
}

const NUMBER_HINTS: Record<string, string> = {
  since: 'Pass epoch milliseconds; parseSince turns "1h" or an ISO time into one.',
  afterSeq: 'Pass the seq of the last row already seen.',
  beforeSeq: 'Pass the seq of the oldest row already seen.',
  afterEndSeq: 'Pass the endSeq of the last row already seen (0 for the start).',
};

/** A numeric filter, checked. */
export function checkNumber(name: string, value: number): number {
  if (typeof value !== 'number' || !Number.isFinite(value)) {
    throw new PaddockError(
      'INVALID_ARGUMENT',
      `${name} must be a finite number, got ${String(value)}. ${NUMBER_HINTS[name] ?? ''}`.trim(),
      { argument: name },
    );
  }
  return value;
}

/** A `tool_invocations` row as the databases return it (`success`: 0/1 in SQLite, a boolean in PostgreSQL). */
export interface InvocationRow {
  seq: number;
  end_seq: number | null;
  id: string;
  started_at: number;
  duration_ms: number;
  tool: string;
  source: string;
  caller: string;
  via: string;
  parent_id: string | null;
  generation: number | null;
  job_id: string | null;
  input: string;
  output_bytes: number;
  sent_bytes: number | null;
  success: number | boolean;
  error_code: string | null;
  error_message: string | null;
  policy_rule: string | null;
  state: string;
  input_sha256: string | null;
  approval_id: string | null;
  approver: string | null;
  principal: string | null;
  checkpoint_id: string | null;
}

/** The chain columns after {@link INVOCATION_COLUMNS}. */
export const CHAIN_COLUMNS = 'chain_prev, chain_hash';

/** A row with its chain links, as the databases return it. */
export interface ChainedRow extends InvocationRow {
  chain_prev: string | null;
  chain_hash: string | null;
}

/** A stored row with its links from its columns. */
export function fromChainedRow(r: ChainedRow): ChainedInvocation {
  return { ...fromInvocationRow(r), chainPrev: r.chain_prev, chainHash: r.chain_hash };
}

/** The query of {@link AuditStore.unlinked}: ended rows outside the chain (`?` = the chain's start). */
export const UNLINKED_WHERE =
  "state <> 'running' AND (end_seq IS NULL OR (chain_hash IS NULL AND end_seq > ?))";

/** The columns of an {@link InvocationRow}. */
export const INVOCATION_COLUMNS =
  'seq, end_seq, id, started_at, duration_ms, tool, source, caller, via, parent_id, generation, job_id, input, ' +
  'output_bytes, sent_bytes, success, error_code, error_message, policy_rule, state, input_sha256, approval_id, approver, principal, checkpoint_id';

/** A stored row from its columns. */
export function fromInvocationRow(r: InvocationRow): StoredInvocation {
  return {
    seq: r.seq,
    endSeq: r.end_seq,
    id: r.id,
    startedAt: r.started_at,
    durationMs: r.duration_ms,
    tool: r.tool,
    source: r.source,
    caller: r.caller,
    via: r.via as Via,
    parentId: r.parent_id,
    generation: r.generation,
    jobId: r.job_id,
    input: r.input,
    outputBytes: r.output_bytes,
    sentBytes: r.sent_bytes,
    success: r.success === 1 || r.success === true,
    errorCode: r.error_code,
    errorMessage: r.error_message,
    policyRule: r.policy_rule,
    state: r.state as InvocationState,
    inputSha256: r.input_sha256,
    approvalId: r.approval_id,
    approver: r.approver,
    principal: r.principal,
    checkpointId: r.checkpoint_id,
  };
}
