/**
 * The seam between the gateway and approvals: the gateway asks a gate whether an `ask` call
 * may run; the gate (src/approvals) decides who waits and records the decision. Types only,
 * so `tools` never imports `approvals`.
 */
import type { PaddockError } from '../shared/errors.js';
import type { CallerContext, Tool } from './tool.js';

export type { ApprovalAnswer, ApprovalPrompt, CallerApprovals } from './caller-approvals.js';

/** One `ask` call that passed validation. */
export interface AdmitRequest {
  tool: Tool;
  input: unknown;
  caller: CallerContext;
  invocationId: string;
  /** The permission rule that made the tool `ask`. */
  rule: string;
  /** Absolute deadline of the call, epoch milliseconds. */
  deadline: number;
}

/** May the call run, and which approval (and approver) decided it. */
export type Admission =
  | { run: true; approvalId?: string; approver?: string; policyRule?: string }
  | { run: false; error: PaddockError; approvalId?: string; approver?: string | null };

export interface ApprovalGate {
  /** Decides an `ask` call: runs it at once, waits for a person, or refuses. Never throws. */
  admit(request: AdmitRequest): Promise<Admission>;
  /** A standing rule lets this caller run `tool` without anyone being asked (listed to it). */
  preapproved(tool: Tool, caller: CallerContext): boolean;
}
