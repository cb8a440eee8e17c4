/**
 * The policy's verdict on a call before it runs: the lexical check of the actions the tool
 * declares from its input (no I/O). The gateway refuses an `ask` call the policy would deny
 * before a person is asked; the dock shows the verdict on the approval card.
 */
import type { Sandbox } from '../policy/types.js';
import { PaddockError } from '../shared/errors.js';
import type { Tool } from './tool.js';

/** What the policy says of a call before it runs (null: the tool declares no actions). */
export interface PolicyVerdict {
  allow: boolean;
  /** The deciding rule of the first denial, else of the last allowed action. */
  rule: string;
  reason: string;
}

/** The verdict on `tool` called with `input`; null when the tool declares no policy actions. */
export function policyVerdict(tool: Tool, input: unknown, policy: Sandbox): PolicyVerdict | null {
  if (!tool.policyActions || !input || typeof input !== 'object') return null;
  let actions: ReturnType<NonNullable<Tool['policyActions']>>;
  try {
    actions = tool.policyActions(input as Record<string, unknown>);
  } catch {
    return null;
  }
  let last: PolicyVerdict | null = null;
  for (const action of actions) {
    const d = policy.check(action);
    if (!d.allow) return { allow: false, rule: d.rule, reason: d.reason };
    last = { allow: true, rule: d.rule, reason: d.reason };
  }
  return last;
}

/** The error of an `ask` call the policy refuses before anyone is asked. */
export function refusedBeforeApproval(verdict: PolicyVerdict): PaddockError {
  return new PaddockError(
    'POLICY_DENIED',
    `The policy refuses this call (${verdict.rule}): ${verdict.reason}. Nobody was asked to approve it; change the arguments or ask an operator to change the policy.`,
    { rule: verdict.rule },
  );
}
