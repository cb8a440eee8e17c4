/**
 * The checkpoint before a call a person approved (see tools/approved-checkpoint.ts), wired to
 * the computers: the caller's computer is checkpointed only when it runs — no computer is
 * created or started for it — and the approval record is told the checkpoint's id.
 */
import { checkpointBeforeCall } from '../computer/checkpoint-actions.js';
import type { ComputerService } from '../computer/service.js';
import type { Logger } from '../shared/logger.js';
import type { ApprovalStore } from '../store/approvals.js';
import type { CheckpointBeforeApproved } from '../tools/approved-checkpoint.js';

/** What the checkpoint before an approved call needs. */
export interface ApprovedCheckpointDeps {
  /** Read when a call comes (the computers are built after the gateway). */
  computers: () => ComputerService;
  approvals: ApprovalStore;
  logger: Logger;
}

/** Checkpoints the caller's running server computer before an approved call. */
export function checkpointBeforeApproved(deps: ApprovedCheckpointDeps): CheckpointBeforeApproved {
  return async ({ tool, caller, invocationId, approvalId }) => {
    const computers = deps.computers();
    const key = computers.keyOf(caller);
    // list() creates nothing: a caller without a running computer has nothing to undo
    if (!computers.list().some((c) => c.name === key && c.lifecycle === 'running')) return null;
    let manager: ReturnType<ComputerService['for']>;
    try {
      manager = computers.for(caller);
    } catch {
      // a computer this caller may not reach: the call itself answers why
      return null;
    }
    try {
      const checkpoint = await checkpointBeforeCall(
        manager,
        'approval',
        { invocationId, tool: tool.name, approvalId },
        caller.signal,
      );
      if (!checkpoint) return null;
      const named = await deps.approvals.setCheckpoint(approvalId, invocationId, checkpoint.id);
      deps.logger.info('checkpoint.before_approved', {
        computer: key,
        checkpointId: checkpoint.id,
        invocationId,
        approvalId,
        tool: tool.name,
        ...(named ? {} : { approvalNamesIt: false }),
      });
      return checkpoint.id;
    } catch (e) {
      // the gateway refuses the call; the cause in full is for the operator
      deps.logger.error('checkpoint.before_approved_failed', {
        computer: key,
        invocationId,
        approvalId,
        tool: tool.name,
        error: (e as Error).message,
      });
      throw e;
    }
  };
}
