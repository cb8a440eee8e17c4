/**
 * What a caller brings for approvals (its entry point sets it on the caller context): how its
 * person is asked, how long it may wait, and who is told that it waits. No import of the rest of
 * the pipeline, so the caller context can name it.
 */

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
  /**
   * The call renders an MCP App view in the client, which shows its approval card: a person
   * can decide it there, so it waits for the gateway instead of counting as confirmed by the client.
   */
  inView?: boolean;
  /** Told when a call starts (an approval id) and stops (null) waiting. */
  onWaiting?: (approval: { id: string; tool: string } | null) => void | Promise<void>;
}
