/** Rows of `approvals` and `approval_rules` as both databases return them, and the records they make. */
import type { Approval, ApprovalRule, ApprovalScope, ApprovalStatus, DecidedVia } from './approvals.js';

/** A row of `approvals`. */
export interface ApprovalRow {
  id: string;
  invocation_id: string;
  tool: string;
  source: string;
  arguments: string;
  arguments_sha256: string;
  caller: string;
  via: string;
  parent_id: string | null;
  run_id: string | null;
  agent: string | null;
  permission_rule: string;
  requested_at: number;
  expires_at: number;
  status: string;
  scope: string | null;
  decided_at: number | null;
  decided_by: string | null;
  decided_via: string | null;
  reason: string | null;
  /** Null in rows of databases migrated before checkpoints. */
  checkpoint_id?: string | null;
}

/** A row of `approval_rules`. */
export interface RuleRow {
  id: string;
  agent: string;
  tool: string;
  created_at: number;
  created_by: string;
  approval_id: string | null;
  removed_at: number | null;
  removed_by: string | null;
}

/** The record of an approval row. */
export function approvalFromRow(r: ApprovalRow): Approval {
  return {
    id: r.id,
    invocationId: r.invocation_id,
    tool: r.tool,
    source: r.source,
    arguments: r.arguments,
    argumentsSha256: r.arguments_sha256,
    caller: r.caller,
    via: r.via,
    parentId: r.parent_id,
    runId: r.run_id,
    agent: r.agent,
    permissionRule: r.permission_rule,
    requestedAt: r.requested_at,
    expiresAt: r.expires_at,
    status: r.status as ApprovalStatus,
    scope: r.scope as ApprovalScope | null,
    decidedAt: r.decided_at,
    decidedBy: r.decided_by,
    decidedVia: r.decided_via as DecidedVia | null,
    reason: r.reason,
    checkpointId: r.checkpoint_id ?? null,
  };
}

/** The record of a rule row. */
export function ruleFromRow(r: RuleRow): ApprovalRule {
  return {
    id: r.id,
    agent: r.agent,
    tool: r.tool,
    createdAt: r.created_at,
    createdBy: r.created_by,
    approvalId: r.approval_id,
    removedAt: r.removed_at,
    removedBy: r.removed_by,
  };
}
