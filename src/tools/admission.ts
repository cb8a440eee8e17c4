/**
 * The admission stage of the gateway: may this call run? In order — the tool's permission
 * (`deny`; `ask` where nobody can approve), its input against its schema, the policy's verdict
 * on the actions the input leads to (a call the policy refuses is refused before anyone is
 * asked), then a person's approval for `ask` tools. Nobody is asked to approve a call that
 * cannot run.
 */
import type { Sandbox } from '../policy/types.js';
import { PaddockError, toPaddockError } from '../shared/errors.js';
import { endApprovalSpan } from '../telemetry/attributes.js';
import type { ApprovalGate } from './approval-gate.js';
import type { CallRecord } from './call-record.js';
import type { PermissionPolicy } from './permissions.js';
import { policyVerdict, refusedBeforeApproval } from './policy-preview.js';
import type { CallerContext, Tool } from './tool.js';
import type { InputValidator } from './validation.js';

/** What admission needs from the gateway. */
export interface AdmissionDeps {
  permissions: PermissionPolicy;
  validator: InputValidator;
  policy: Sandbox;
  approvals?: ApprovalGate;
  /** Someone can approve this caller's `ask` call of `tool`. */
  canApprove(tool: Tool, caller: CallerContext): boolean;
}

/** Null when the call may run; else why it may not (the approval's record is in `call.lineage`). */
export async function admit(
  deps: AdmissionDeps,
  tool: Tool,
  input: unknown,
  caller: CallerContext,
  call: CallRecord,
  deadline: number,
): Promise<PaddockError | null> {
  const { permission, rule } = deps.permissions.resolve(tool);
  if (permission === 'deny') {
    return new PaddockError(
      'POLICY_DENIED',
      `Tool "${tool.name}" is denied by ${rule}; ask an operator to change its permission.`,
      { rule },
    );
  }
  if (permission === 'ask' && !deps.canApprove(tool, caller)) {
    return new PaddockError(
      'PERMISSION_REQUIRED',
      `Tool "${tool.name}" needs a person's approval (${rule}) and nobody can approve it here; call it directly from an attended session, or set its permission to auto.`,
      { rule },
    );
  }
  try {
    deps.validator.validate(tool.inputSchema, input ?? {}, tool.name);
  } catch (e) {
    return toPaddockError(e);
  }
  if (permission !== 'ask') return null;
  const verdict = policyVerdict(tool, input, caller.policy ?? deps.policy);
  if (verdict && !verdict.allow) {
    call.lineage.policyRule = verdict.rule;
    return refusedBeforeApproval(verdict);
  }
  if (!deps.approvals) return null;
  const wait = call.span.child('approval wait', { attributes: { 'gen_ai.tool.name': tool.name } });
  const admission = await deps.approvals.admit({
    tool,
    input,
    caller,
    invocationId: call.invocationId,
    rule,
    deadline,
  });
  endApprovalSpan(wait, admission);
  if (admission.approvalId !== undefined) call.lineage.approvalId = admission.approvalId;
  if (admission.approver !== undefined) call.lineage.approver = admission.approver;
  if (!admission.run) return admission.error;
  if (admission.policyRule) call.lineage.policyRule = admission.policyRule;
  return null;
}
