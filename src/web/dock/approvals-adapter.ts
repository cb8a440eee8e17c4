/**
 * The approvals panel's source over the approval service: pending approvals (oldest first, the
 * arguments whole up to a bound that the page is told about) and the standing rules.
 */
import type { ApprovalService, ApprovalView } from '../../approvals/service.js';
import { summarizeCall } from './call-summary.js';
import { type DockApproval, MAX_APPROVAL_ARGUMENTS_CHARS } from './protocol.js';
import type { DockApprovals } from './sources.js';

/** Most pending approvals one panel lists (the oldest first; the CLI lists them all). */
const MAX_PANEL_APPROVALS = 200;

/** What the cards add for a person: the caller's name and the policy's verdict on the call. */
export interface ApprovalCardExtras {
  callerLabel?(caller: string): string;
  verdict?(tool: string, args: unknown): { allow: boolean; rule: string; reason: string } | null;
}

export function dockApprovalsFromService(
  service: ApprovalService,
  extras: ApprovalCardExtras = {},
): DockApprovals {
  const toDockApproval = (a: ApprovalView) => withExtras(toDockApprovalBase(a), a, extras);
  return {
    state: async () => ({
      pending: (await service.list({ pendingOnly: true, limit: MAX_PANEL_APPROVALS }))
        .filter((a) => a.waiting)
        .reverse()
        .map(toDockApproval),
      rules: (await service.rules()).map((r) => ({
        id: r.id,
        agent: r.agent,
        tool: r.tool,
        createdAt: r.createdAt,
        createdBy: r.createdBy,
        approvalId: r.approvalId,
      })),
    }),
    decide: async (id, decision, by) => {
      await service.decide(id, { ...decision, by, via: 'dock' });
    },
    removeRule: async (ruleId, by) => {
      await service.removeRule(ruleId, by);
    },
    onChange: (listener) => service.watch({ listener: () => listener(), decider: true }),
    history: async (limit) => {
      const label = (caller: string) => extras.callerLabel?.(caller) ?? caller;
      return (await service.list({ pendingOnly: false, limit })).map((a) => ({
        id: a.id,
        tool: a.tool,
        summary: summarizeCall(a.tool, a.arguments),
        askedBy: a.agent ? `agent ${a.agent}` : label(a.caller),
        requestedAt: a.requestedAt,
        status: a.status,
        scope: a.scope,
        decidedBy: a.decidedBy ? label(a.decidedBy) : a.status === 'expired' ? 'nobody (expired)' : null,
        decidedAt: a.decidedAt,
        reason: a.reason,
        checkpointId: a.checkpointId,
      }));
    },
  };
}

function withExtras(card: DockApproval, a: ApprovalView, extras: ApprovalCardExtras): DockApproval {
  let args: unknown;
  try {
    args = JSON.parse(a.arguments);
  } catch {
    args = undefined;
  }
  return {
    ...card,
    summary: summarizeCall(a.tool, a.arguments),
    ...(extras.callerLabel ? { callerLabel: extras.callerLabel(a.caller) } : {}),
    ...(extras.verdict ? { verdict: extras.verdict(a.tool, args) } : {}),
  };
}

function toDockApprovalBase(a: ApprovalView): DockApproval {
  const truncated = a.arguments.length > MAX_APPROVAL_ARGUMENTS_CHARS;
  return {
    id: a.id,
    tool: a.tool,
    source: a.source,
    description: a.description,
    arguments: truncated ? a.arguments.slice(0, MAX_APPROVAL_ARGUMENTS_CHARS) : a.arguments,
    argumentsChars: a.arguments.length,
    argumentsTruncated: truncated,
    argumentsSha256: a.argumentsSha256,
    caller: a.caller,
    agent: a.agent,
    runId: a.runId,
    requestedAt: a.requestedAt,
    expiresAt: a.expiresAt,
  };
}
