/** What an ended approval means for its call and for a late decision. */
import { PaddockError } from '../shared/errors.js';
import type { Admission } from '../tools/approval-gate.js';
import type { Approval } from './types.js';

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
