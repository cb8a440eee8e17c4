/** The approval store: approval records and "always allow" rules. */

/**
 * Where an approval stands. `pending` until a person decides or it ends without one:
 * `expired` (its time ran out: a denial), `cancelled` (the caller gave up, e.g. a client
 * disconnected), `interrupted` (the server stopped while the call waited).
 */
export type ApprovalStatus = 'pending' | 'approved' | 'denied' | 'expired' | 'cancelled' | 'interrupted';

/** What an approval covers: this call only, the tool for the rest of the caller's session, or always for the agent. */
export type ApprovalScope = 'once' | 'session' | 'always';

/** Where a decision came from. `server`: the server itself ended it (expiry, shutdown). */
export type DecidedVia = 'elicitation' | 'dock' | 'cli' | 'server';

/** One approval record. */
export interface Approval {
  id: string;
  /** The invocation id the call's audit row will carry. */
  invocationId: string;
  tool: string;
  source: string;
  /** The exact arguments, canonical JSON. */
  arguments: string;
  /** SHA-256 (hex) of `arguments`. */
  argumentsSha256: string;
  caller: string;
  via: string;
  parentId: string | null;
  runId: string | null;
  agent: string | null;
  /** The permission rule that made the tool `ask`. */
  permissionRule: string;
  requestedAt: number;
  expiresAt: number;
  status: ApprovalStatus;
  scope: ApprovalScope | null;
  decidedAt: number | null;
  decidedBy: string | null;
  decidedVia: DecidedVia | null;
  reason: string | null;
  /**
   * The checkpoint of the computer taken just before the approved call ran (restoring it undoes
   * the call); null when none was taken (a refusal, or no running computer the call acts on).
   */
  checkpointId: string | null;
}

/** A new pending approval (the store adds status and the decision fields). */
export type ApprovalRequest = Omit<
  Approval,
  'status' | 'scope' | 'decidedAt' | 'decidedBy' | 'decidedVia' | 'reason' | 'checkpointId'
>;

/** "Always allow this tool for this agent", written by a decision; removed by the operator. */
export interface ApprovalRule {
  id: string;
  agent: string;
  tool: string;
  createdAt: number;
  createdBy: string;
  approvalId: string | null;
  removedAt: number | null;
  removedBy: string | null;
}

/** Longest reason kept with a decision. */
export const MAX_REASON_CHARS = 2000;

/** How an approval ends: a person's decision, or the server's (expiry, cancel, shutdown). */
export interface ApprovalEnd {
  status: Exclude<ApprovalStatus, 'pending'>;
  by: string | null;
  via: DecidedVia;
  reason: string | null;
  scope: ApprovalScope | null;
  at: number;
}

/**
 * Approval records and rules. Ending a record is conditional on it being pending, so of two
 * decisions (from any servers) exactly one wins.
 */
export interface ApprovalStore {
  /** Writes a new pending approval, owned by this process. */
  insert(request: ApprovalRequest): Promise<Approval>;
  /** Ends a pending approval; undefined when it was not pending (someone else ended it first). */
  end(id: string, end: ApprovalEnd): Promise<Approval | undefined>;
  get(id: string): Promise<Approval | undefined>;
  /**
   * Names the checkpoint taken before the call this approval let run. Only the approval's own
   * call (`invocationId`, once approved) sets it, and only once: undefined otherwise (a later call
   * that a session grant or a rule let run keeps its checkpoint in its audit row only).
   */
  setCheckpoint(id: string, invocationId: string, checkpointId: string): Promise<Approval | undefined>;
  /** The process whose call waits for this approval. */
  ownerPid(id: string): Promise<number | null>;
  /** How many approvals of this caller are pending. */
  pendingCount(caller: string): Promise<number>;
  /** Newest first; `pending` only, or every status; limit 1…1000 (default 100). */
  list(options?: { pendingOnly?: boolean; limit?: number }): Promise<Approval[]>;
  /**
   * Marks pending approvals whose process is gone as `interrupted`; approvals of a live
   * process are left alone. Returns the approvals it marked.
   */
  interruptOrphans(at: number, isAlive?: (pid: number) => boolean): Promise<Approval[]>;
  /** Writes "always allow `tool` for `agent`"; an active rule for the pair is kept as it is. */
  addRule(
    agent: string,
    tool: string,
    by: string,
    approvalId: string | null,
    at: number,
  ): Promise<ApprovalRule>;
  /** Removes a rule (kept, marked removed). Rejects NOT_FOUND for an unknown or removed rule. */
  removeRule(id: string, by: string, at: number): Promise<ApprovalRule>;
  rule(id: string): Promise<ApprovalRule | undefined>;
  activeRule(agent: string, tool: string): Promise<ApprovalRule | undefined>;
  /** Rules, active first; removed ones too when `all`. */
  rules(all?: boolean): Promise<ApprovalRule[]>;
}
