import type { Disposable } from '../shared/disposable.js';

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
}

/** A new pending approval (the store adds status and the decision fields). */
export type ApprovalRequest = Omit<
  Approval,
  'status' | 'scope' | 'decidedAt' | 'decidedBy' | 'decidedVia' | 'reason'
>;

/** A person's answer. */
export interface Decision {
  approve: boolean;
  /** Who decided: `dock:owner`, `cli`, `mcp:<session>`. */
  by: string;
  via: Exclude<DecidedVia, 'server'>;
  reason?: string | undefined;
  /** Default `once`. `always` only for agent runs. */
  scope?: ApprovalScope | undefined;
}

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

/** What the dock's panel and other watchers are told. */
export type ApprovalEvent =
  | { kind: 'requested'; approval: Approval }
  | { kind: 'decided'; approval: Approval }
  | { kind: 'rules' };

/** A watcher of approvals; a `decider` (a signed-in dock page) counts as "a dock session is open". */
export interface ApprovalWatch {
  listener: (event: ApprovalEvent) => void;
  decider?: boolean;
}

export type { Disposable };
