import type { Disposable } from '../shared/disposable.js';
import type { Via } from '../shared/via.js';

/** How a call reached the gateway. */
export type { Via };

/** One row of `tool_invocations`. */
export interface InvocationRecord {
  id: string;
  /** Epoch milliseconds. */
  startedAt: number;
  durationMs: number;
  tool: string;
  source: string;
  caller: string;
  via: Via;
  parentId?: string | null;
  generation?: number | null;
  jobId?: string | null;
  /** The input as given; the store redacts secrets and truncates before writing. */
  input: unknown;
  outputBytes: number;
  /** Bytes the call sent onward apart from its input (egress: program → upstream); absent for tool calls. */
  sentBytes?: number | null;
  success: boolean;
  errorCode?: string | null;
  errorMessage?: string | null;
  policyRule?: string | null;
  /** The approval that decided this `ask` call (approved or refused), if one did. */
  approvalId?: string | null;
  /** Who approved or refused it (`dock:owner`, `cli`, `mcp:<session>`); null when it expired. */
  approver?: string | null;
}

/**
 * Where a row stands: `running` from the moment the call starts executing until it ends;
 * `ended` once its outcome is written; `interrupted` when the process running it stopped
 * first (found and marked at the next start).
 */
export type InvocationState = 'running' | 'ended' | 'interrupted';

/** A call about to execute: its row is written before any effect. */
export type InvocationStart = Omit<
  InvocationRecord,
  'durationMs' | 'outputBytes' | 'sentBytes' | 'success' | 'errorCode' | 'errorMessage' | 'policyRule'
>;

/** How a started call ended (completes its `running` row). */
export type InvocationEnd = Pick<
  InvocationRecord,
  | 'durationMs'
  | 'outputBytes'
  | 'sentBytes'
  | 'success'
  | 'errorCode'
  | 'errorMessage'
  | 'policyRule'
  | 'generation'
  | 'jobId'
>;

/** A stored row: the record as written (input redacted to a JSON string) plus its sequence. */
export interface StoredInvocation extends Omit<InvocationRecord, 'input'> {
  /** Monotonic row sequence (for `--follow` and cursors). */
  seq: number;
  state: InvocationState;
  /** Redacted JSON text of the input, cut to a preview when long (see `inputSha256`). */
  input: string;
  /** Set when `input` is a cut preview: SHA-256 (hex) of the whole redacted input, kept apart. */
  inputSha256: string | null;
}

/** Filters of `AuditStore.query`; all given filters must match. */
export interface AuditQuery {
  tool?: string;
  /** Epoch milliseconds: rows started at or after. */
  since?: number;
  /** `true`: failed rows only (`success = 0`). `false` or absent: no filter on the outcome. */
  failed?: boolean;
  caller?: string;
  parentId?: string;
  jobId?: string;
  /** Rows with seq greater than this. */
  afterSeq?: number;
  /** Rows with seq less than this (paging back through newest-first results). */
  beforeSeq?: number;
  /** Newest first when false (default); oldest first when true. */
  ascending?: boolean;
  /** Maximum rows returned: default 100, at most 10,000. */
  limit?: number;
}

/**
 * The audit log. Every write is durable when it returns (the row survives a process crash).
 * A call that executes is written twice: `begin` before its first effect (state `running`),
 * `complete` with its outcome; a call refused before executing is one `record`.
 */
export interface AuditStore {
  record(row: InvocationRecord): StoredInvocation;
  begin(row: InvocationStart): StoredInvocation;
  /** Writes the outcome of a `running` row; throws NOT_FOUND when no such row runs. */
  complete(id: string, end: InvocationEnd): StoredInvocation;
  /**
   * Marks `running` rows whose process no longer exists as `interrupted` (the server stopped
   * during the call). Returns how many rows it marked.
   */
  reconcile(isAlive?: (pid: number) => boolean): number;
  /** The whole redacted input (JSON text) a row's `inputSha256` names. */
  fullInput(sha256: string): string | undefined;
  query(q?: AuditQuery): StoredInvocation[];
  get(id: string): StoredInvocation | undefined;
  /** In-process listeners see each row right after it is committed. */
  subscribe(listener: (row: StoredInvocation) => void): Disposable;
}

/** One remembered note. */
export interface Memory {
  id: string;
  namespace: string;
  content: string;
  tags: string[];
  createdAt: number;
  /** Relevance for recall (higher is better); absent for plain listings. */
  score?: number;
}

/** Long-term memory (SQLite FTS5 in the embedded default). */
export interface MemoryStore {
  save(namespace: string, content: string, tags?: string[]): Memory;
  recall(namespace: string, query: string, limit: number): Memory[];
}
