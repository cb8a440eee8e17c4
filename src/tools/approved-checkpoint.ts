/**
 * The stage between admission and the audit row: a call a person approved that may change the
 * caller's computer is preceded by a checkpoint of that computer, so the person can undo it.
 * The checkpoint is named by the call's audit row (written next) and by its approval. When the
 * checkpoint cannot be taken the call does not run: an approval was given for a call that could
 * be undone, and running it without its undo would break that silently.
 */
import { PaddockError, toPaddockError } from '../shared/errors.js';
import { actsOnComputer, type CallRecord } from './call-record.js';
import type { CallerContext, Tool } from './tool.js';

/** One approved call about to run. */
export interface ApprovedCall {
  tool: Tool;
  caller: CallerContext;
  /** The id of the call's audit row. */
  invocationId: string;
  /** The approval (or the session grant or rule from one) that let the call run. */
  approvalId: string;
}

/**
 * Checkpoints the caller's computer before an approved call: the checkpoint's id, or null when
 * there is nothing to checkpoint (no running computer, a browser computer). Rejects when a
 * checkpoint should be taken and could not be. Wired by the composition root (`tools` does not
 * reach computers).
 */
export type CheckpointBeforeApproved = (call: ApprovedCall) => Promise<string | null>;

/**
 * Takes the checkpoint before `call` when a person approved it and it may change the computer;
 * its id goes into `call.lineage` (and so into the audit row). Null when the call may run;
 * else the refusal.
 */
export async function checkpointApproved(
  take: CheckpointBeforeApproved | undefined,
  tool: Tool,
  caller: CallerContext,
  call: CallRecord,
): Promise<PaddockError | null> {
  const approvalId = call.lineage.approvalId;
  if (!take || approvalId === undefined || !actsOnComputer(tool)) return null;
  const span = call.span.child('checkpoint before approved call', {
    attributes: { 'gen_ai.tool.name': tool.name },
  });
  try {
    const checkpointId = await take({ tool, caller, invocationId: call.invocationId, approvalId });
    if (checkpointId !== null) call.lineage.checkpointId = checkpointId;
    span.end();
    return null;
  } catch (e) {
    const cause = toPaddockError(e);
    span.end({ errorType: cause.code, message: cause.message });
    // a host error's own words (paths of the data directory) stay in the server's log
    const why =
      e instanceof PaddockError
        ? cause.message.replace(/\.$/, '')
        : 'the server could not write it; its log says why';
    return new PaddockError(
      cause.code,
      `${tool.name} was approved but not run: the checkpoint that lets a person undo it could not be taken (${why}). The call did nothing; fix the cause (see docs/checkpoints.md) and call again.`,
      { approvalId, cause: cause.code },
    );
  }
}
