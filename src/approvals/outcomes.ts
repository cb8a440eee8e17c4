/** What an ended approval means for its call and for a late decision. */
import { PaddockError } from '../shared/errors.js';
import { randomId } from '../shared/ids.js';
import type { Admission, AdmitRequest } from '../tools/approval-gate.js';
import { argumentsSha256, canonicalJson } from './canonical.js';
import type { Approval, ApprovalRequest } from './types.js';

/** The refusal of a call when `max` calls of its caller already wait for approval. */
export function tooManyPending(max: number): PaddockError {
  return new PaddockError(
    'LIMIT_EXCEEDED',
    `${max} calls of this caller already wait for approval; wait for a decision on them (\`paddock approvals list\`) before asking again.`,
    { limit: max },
  );
}

/** The record of an `ask` call that waits from `now` for at most `windowMs` (and its deadline). */
export function approvalRequest(request: AdmitRequest, now: number, windowMs: number): ApprovalRequest {
  const { tool, caller } = request;
  return {
    id: randomId('apr', 9),
    invocationId: request.invocationId,
    tool: tool.name,
    source: tool.source,
    arguments: canonicalJson(request.input ?? {}),
    argumentsSha256: argumentsSha256(request.input ?? {}),
    caller: caller.caller,
    via: caller.via,
    parentId: caller.parentId ?? null,
    runId: caller.runId ?? null,
    agent: caller.approvals?.agent ?? null,
    permissionRule: request.rule,
    requestedAt: now,
    expiresAt: Math.min(request.deadline, now + windowMs),
  };
}

export function alreadyEnded(a: Approval): PaddockError {
  const by = a.decidedBy ? ` by ${a.decidedBy}` : '';
  const at = a.decidedAt ? ` at ${new Date(a.decidedAt).toISOString()}` : '';
  return new PaddockError(
    'INVALID_ARGUMENT',
    `Approval "${a.id}" is already ${a.status}${by}${at}; a decision is final. The caller can make the call again to ask anew.`,
    { id: a.id, status: a.status },
  );
}

/** The gateway's answer for an ended approval. */
export function admissionOf(a: Approval): Admission {
  const ids = { approvalId: a.id, approver: a.decidedBy };
  const reason = a.reason ? `: ${a.reason}` : '';
  switch (a.status) {
    case 'approved':
      return { run: true, approvalId: a.id, approver: a.decidedBy ?? 'unknown' };
    case 'denied':
      return {
        run: false,
        ...ids,
        error: new PaddockError(
          'PERMISSION_REQUIRED',
          `${a.decidedBy ?? 'A person'} denied the call to "${a.tool}" (approval ${a.id})${reason}. Do not repeat it unchanged; adjust the request or ask the person what to do instead.`,
          { approvalId: a.id, reason: a.reason, decidedBy: a.decidedBy },
        ),
      };
    case 'expired':
      return {
        run: false,
        ...ids,
        error: new PaddockError(
          'PERMISSION_REQUIRED',
          `No one approved the call to "${a.tool}" before approval ${a.id} expired; an expired approval is a denial and nothing ran. Tell the person it needs their approval, or carry on without it.`,
          { approvalId: a.id, expired: true },
        ),
      };
    case 'cancelled':
      return {
        run: false,
        ...ids,
        error: new PaddockError(
          'TIMEOUT',
          `The call to "${a.tool}" was cancelled while it waited for approval ${a.id}; nothing ran.`,
          { approvalId: a.id },
        ),
      };
    default:
      return {
        run: false,
        ...ids,
        error: new PaddockError(
          'NOT_RUNNING',
          `The server stopped while the call to "${a.tool}" waited for approval ${a.id}; nothing ran. Retry once the server is back.`,
          { approvalId: a.id },
        ),
      };
  }
}
