/**
 * The audit store: rows of `tool_invocations` and the contract every implementation keeps.
 * The audit domain (src/audit) writes and reads through it; SQLite (embedded) and PostgreSQL
 * (a fleet of servers) implement it.
 */
import type { Disposable } from '../shared/disposable.js';
import type { Via } from '../shared/via.js';
import type { ChainedInvocation, ChainHead } from './audit-chain.js';

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
  /**
   * On whose behalf the call was made: `owner`, `client:<id>` (an OAuth client) or
   * `agent:<name>`; null for rows written before principals were recorded.
   */
  principal?: string | null;
  /**
   * The checkpoint of the computer taken just before this call ran (calls a person approved that
   * act on a running computer); restoring it undoes the call. Null otherwise.
   */
  checkpointId?: string | null;
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
  /** Monotonic row sequence, in the order rows were written (cursors, paging). */
  seq: number;
  /**
   * Monotonic sequence of the moment the row's outcome was written (`record`, `complete`, or
   * marked interrupted); null while it runs. Followers read rows in this order (`ended`).
   */
  endSeq: number | null;
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
  /** Rows of one principal (`owner`, `client:<id>`, `agent:<name>`). */
  principal?: string;
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
 * The audit log. Every write is durable when its promise resolves (the row survives a crash of
 * the process), so a caller never sees a result before its row exists. A call that executes is
 * written twice: `begin` before its first effect (state `running`), `complete` with its
 * outcome; a call refused before executing is one `record`.
 */
export interface AuditStore {
  /** Writes one finished row and returns it as stored; listeners run after the commit. */
  record(row: InvocationRecord): Promise<StoredInvocation>;
  /** Writes the row of a call that starts executing (state `running`, owned by this process). */
  begin(row: InvocationStart): Promise<StoredInvocation>;
  /** Writes the outcome of a `running` row; rejects with NOT_FOUND when no such row runs. */
  complete(id: string, end: InvocationEnd): Promise<StoredInvocation>;
  /**
   * Marks `running` rows whose process no longer exists as `interrupted` (the server stopped
   * during the call). Returns how many rows it marked.
   */
  reconcile(isAlive?: (pid: number) => boolean): Promise<number>;
  /** The whole redacted input (JSON text) a row's `inputSha256` names. */
  fullInput(sha256: string): Promise<string | undefined>;
  query(q?: AuditQuery): Promise<StoredInvocation[]>;
  get(id: string): Promise<StoredInvocation | undefined>;
  /**
   * Rows whose outcome was written after `afterEndSeq`, by any process sharing the store, in
   * `endSeq` order (oldest first), at most `limit` (default 100, at most 10,000). A reader that
   * pages through it never misses a row: no row is given an `endSeq` at or below one a reader
   * could already have seen. `paddock audit --follow` and other servers' dock activity poll it.
   */
  ended(afterEndSeq: number, limit?: number): Promise<StoredInvocation[]>;
  /** The highest `endSeq` written so far (0 for an empty log): where a new follower starts. */
  lastEndSeq(): Promise<number>;
  /**
   * Calls `listener` with every row that ends, once, in end order: rows written through this
   * store right after their commit, and rows written by other processes sharing the store
   * soon after (polled with `ended`). A listener that throws is logged and never affects
   * writes or the other listeners.
   */
  subscribe(listener: (row: StoredInvocation) => void): Disposable;
  /**
   * Rows whose end seq is above `afterEndSeq`, in end seq order, with their chain links (at
   * most `limit`, default 100, at most 10,000): what `paddock audit verify` walks.
   */
  chained(afterEndSeq: number, limit?: number): Promise<ChainedInvocation[]>;
  /** The head of the hash chain (the last end seq given and its link). */
  chainHead(): Promise<ChainHead>;
  /** The row whose link is `hash`, if any (to tell a removed row from a moved one). */
  byChainHash(hash: string): Promise<ChainedInvocation | undefined>;
  /**
   * Rows that claim to have ended but stand outside the chain: no end seq, or no link while
   * above the chain's start (a row written around the store). At most `limit`.
   */
  unlinked(limit?: number): Promise<ChainedInvocation[]>;
}
