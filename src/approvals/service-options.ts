/** What the approval service is built from (wired by main.ts). */
import type { Logger } from '../shared/logger.js';
import type { Deciders } from './deciders.js';
import type { ApprovalStore } from './types.js';

/** Who waits for an `ask` call of an attended MCP client (paddock.yaml `approvals.mcp`). */
export type McpApprovalMode = 'client' | 'gateway';

export interface ApprovalServiceOptions {
  store: ApprovalStore;
  logger: Logger;
  /**
   * How often the active "always allow" rules are re-read (another server sharing the store
   * may add or remove one); listings use the last read. Default 5,000 ms.
   */
  rulesRefreshMs?: number;
  /** Absent: `gateway` when the client declared elicitation or a dock page is open, else `client`. */
  mcp?: McpApprovalMode | undefined;
  /** How long an attended call waits for a person (bounded by the call's deadline). */
  timeoutMs: number;
  /** Pending approvals one caller may have at once. */
  maxPendingPerCaller: number;
  /** The description of a tool by name (what a person is shown). */
  describe?: (tool: string) => string | undefined;
  /** A link to an approval in the dock, for prompts and notifications. */
  link?: (approvalId: string) => string | undefined;
  /** Who may decide whose calls; `DEFAULT_DECIDERS` of deciders.ts when absent. */
  deciders?: Deciders;
}
