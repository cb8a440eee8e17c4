/**
 * The seam between the gateway and approvals: the gateway asks a gate whether an `ask` call
 * may run; the gate (src/approvals) decides who waits and records the decision. Types only,
 * so `tools` never imports `approvals`.
 */
import type { PaddockError } from '../shared/errors.js';
import type { CallerContext, Tool } from './tool.js';

/** What the person in an MCP client is asked (form-mode elicitation). */
export interface ApprovalPrompt {
  approvalId: string;
  tool: string;
  description: string;
  /** The exact arguments of the call. */
  arguments: unknown;
  expiresAt: number;
  /**
   * Whether the answer decides the approval. False for a caller that may not approve its own
   * calls (a third party): the person is only told that the call waits for the owner.
   */
  decides: boolean;
}

/** The client person's answer; `approve: false` with the reason they gave (or why none came). */
export interface ApprovalAnswer {
  approve: boolean;
  reason?: string;
}

/** What a caller brings for approvals (set by its entry point). */
export interface CallerApprovals {
  /** The MCP client declared elicitation: its person can be asked in the client. */
  elicit?: (prompt: ApprovalPrompt, signal: AbortSignal) => Promise<ApprovalAnswer>;
  /** Unattended runs: how long one call may wait for a person (AGENT.md `approvals.wait`). */
  waitMs?: number;
  /** The agent a run belongs to ("always allow this tool for this agent"). */
  agent?: string;
  /** Told when a call starts (an approval id) and stops (null) waiting. */
  onWaiting?: (approval: { id: string; tool: string } | null) => void | Promise<void>;
}

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
