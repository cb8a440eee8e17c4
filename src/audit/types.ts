/** How a call reached the gateway. */
export type Via = 'direct' | 'channel' | 'agent' | 'schedule';

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
  success: boolean;
  errorCode?: string | null;
  errorMessage?: string | null;
  policyRule?: string | null;
}

/** A stored row: the record as written (input redacted to a JSON string) plus its sequence. */
export interface StoredInvocation extends Omit<InvocationRecord, 'input'> {
  /** Monotonic row sequence (for `--follow` and cursors). */
  seq: number;
  /** Redacted, possibly truncated JSON text of the input. */
  input: string;
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

export interface Disposable {
  dispose(): void;
}

/** The audit log. `record` is durable when it returns (the row survives a process crash). */
export interface AuditStore {
  record(row: InvocationRecord): StoredInvocation;
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
