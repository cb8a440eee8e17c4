/**
 * Approvals asked in the MCP client: one form-mode elicitation per waiting `ask` call, for
 * clients that declared the `elicitation` capability (form mode, or a bare `{}` from before
 * modes existed). The answer goes back to the approval service, which records it.
 */
import type { ServerContext } from '@modelcontextprotocol/server';
import type { ApprovalAnswer, ApprovalPrompt } from '../tools/approval-gate.js';

/** Whether client capabilities allow a form-mode elicitation. */
export function canElicitForm(capabilities: Record<string, unknown> | undefined): boolean {
  const elicitation = capabilities?.elicitation as Record<string, unknown> | undefined;
  if (!elicitation || typeof elicitation !== 'object') return false;
  return elicitation.form !== undefined || elicitation.url === undefined;
}

/** The form the client shows: approve or deny, and an optional reason. */
export const APPROVAL_FORM = {
  type: 'object',
  properties: {
    decision: {
      type: 'string',
      title: 'Decision',
      description: 'Approve runs this call once, with exactly these arguments.',
      enum: ['approve', 'deny'],
    },
    reason: { type: 'string', title: 'Reason', description: 'Told to the caller when you deny.' },
  },
  required: ['decision'],
} as const;

/** The text of the prompt: the tool, what it does, and the full arguments. */
export function approvalMessage(prompt: ApprovalPrompt): string {
  return [
    `Paddock: allow the call to "${prompt.tool}"? (approval ${prompt.approvalId})`,
    '',
    prompt.description,
    '',
    'Arguments:',
    JSON.stringify(prompt.arguments, null, 2),
  ].join('\n');
}

/** The text of a notice to a client that may not decide: what waits, and who decides it. */
export function approvalNotice(prompt: ApprovalPrompt): string {
  return [
    `Paddock: the call to "${prompt.tool}" waits for the owner's approval (approval ${prompt.approvalId}).`,
    '',
    'The owner decides it in the Paddock dock or with `paddock approvals`; nothing answered here approves or denies it.',
    '',
    'Arguments:',
    JSON.stringify(prompt.arguments, null, 2),
  ].join('\n');
}

/**
 * Asks the client's person within the approval's time; decline and cancel are denials. For a
 * prompt that does not decide, the person is shown a notice with nothing to fill in, and the
 * answer (whatever it is) counts for nothing.
 */
export async function elicitApproval(
  ctx: ServerContext,
  prompt: ApprovalPrompt,
  signal: AbortSignal,
): Promise<ApprovalAnswer> {
  if (!prompt.decides) {
    await ctx.mcpReq.elicitInput(
      { mode: 'form', message: approvalNotice(prompt), requestedSchema: { type: 'object', properties: {} } },
      { signal, timeout: Math.max(1, prompt.expiresAt - Date.now()) },
    );
    return { approve: false, reason: 'informational notice; not a decision' };
  }
  const result = await ctx.mcpReq.elicitInput(
    { mode: 'form', message: approvalMessage(prompt), requestedSchema: APPROVAL_FORM as never },
    { signal, timeout: Math.max(1, prompt.expiresAt - Date.now()) },
  );
  if (result.action === 'accept') {
    const content = (result.content ?? {}) as Record<string, unknown>;
    const reason =
      typeof content.reason === 'string' && content.reason.trim() ? content.reason.trim() : undefined;
    if (content.decision === 'approve') return { approve: true, ...(reason ? { reason } : {}) };
    return { approve: false, reason: reason ?? 'denied in the MCP client' };
  }
  return {
    approve: false,
    reason: result.action === 'decline' ? 'declined in the MCP client' : 'dismissed in the MCP client',
  };
}
