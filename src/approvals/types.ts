import type { Disposable } from '../shared/disposable.js';
import type { Approval, ApprovalScope, DecidedVia } from '../store/approvals.js';

export type {
  Approval,
  ApprovalEnd,
  ApprovalRequest,
  ApprovalRule,
  ApprovalScope,
  ApprovalStatus,
  ApprovalStore,
  DecidedVia,
} from '../store/approvals.js';

/** An approval as shown to a person: the record plus the tool's description and whether a call waits on it. */
export interface ApprovalView extends Approval {
  description: string | null;
  waiting: boolean;
}

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
