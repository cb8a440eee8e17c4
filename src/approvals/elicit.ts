/** Asking the person at an MCP client (elicitation) to decide one approval. */
import type { Logger } from '../shared/logger.js';
import type { AdmitRequest } from '../tools/approval-gate.js';
import type { Approval, Decision } from './types.js';

export interface ElicitDeps {
  /** Whether a call still waits for this approval. */
  waiting(approvalId: string): boolean;
  decide(approvalId: string, decision: Decision): Promise<Approval>;
  logger: Logger;
}

/**
 * Asks the client of `request`, when it declared elicitation. When its person may decide
 * (`decides`), the answer is recorded as the decision; otherwise the question only tells them
 * that the call waits for the owner, and whatever they answer is ignored. A decision made
 * elsewhere first stands; a client that cannot ask leaves the dock and the CLI to decide.
 * Aborting `signal` withdraws the question.
 */
export function elicitDecision(
  request: AdmitRequest,
  approval: Approval,
  signal: AbortSignal,
  deps: ElicitDeps,
  decides: boolean,
): void {
  const { caller, tool } = request;
  const elicit = caller.approvals?.elicit;
  if (!elicit || !deps.waiting(approval.id)) return;
  const prompt = {
    approvalId: approval.id,
    tool: tool.name,
    description: tool.description,
    arguments: request.input ?? {},
    expiresAt: approval.expiresAt,
    decides,
  };
  elicit(prompt, signal).then(
    (answer) => {
      if (!decides || !deps.waiting(approval.id)) return;
      const decision = { approve: answer.approve, by: caller.caller, via: 'elicitation' as const };
      deps.decide(approval.id, { ...decision, reason: answer.reason }).catch(() => {
        // decided elsewhere in the meantime: the first decision stands
      });
    },
    (e: unknown) => {
      // the client could not ask (or gave up): the dock and the CLI can still decide
      if (deps.waiting(approval.id))
        deps.logger.info('approval.elicitation_failed', {
          approvalId: approval.id,
          error: e instanceof Error ? e.message : String(e),
        });
    },
  );
}
