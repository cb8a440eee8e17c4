/**
 * What `view_watch_computer` answers (src/mcp/app/view-state.ts), as the view reads it. The view
 * trusts nothing else: every field arrives through the host's tool-call bridge.
 */

/** One approval card: a call of this conversation waiting for a person. */
export interface ApprovalCard {
  id: string;
  tool: string;
  description: string | null;
  arguments: unknown;
  requestedAt: number;
  expiresAt: number;
}

/** The preview's state (the part the view shows). */
export interface PreviewState {
  path: string | null;
  port: number | null;
  status: string;
  message: string | null;
  navigation: number;
}

/** One answer of view_watch_computer. */
export interface ViewState {
  version: string;
  computer: {
    generation: number | null;
    lifecycle: string;
    profileName: string | null;
    bootError: string | null;
  };
  terminals: { id: string; label: string; active: boolean; exited: boolean; heldBy: string | null }[];
  terminal: {
    terminalId: string;
    output: string;
    nextCursor: string;
    moreBytes: number;
    exited: boolean;
  } | null;
  job:
    | {
        jobId: string;
        state: string;
        stdout: string;
        stderr: string;
        nextCursor: string;
        exitCode: number | null;
      }
    | { jobId: string; error: { code: string; message: string } }
    | null;
  preview: PreviewState;
  approvals: ApprovalCard[];
  canType: boolean;
  canDecide: boolean;
}

/** Where the view is in each stream (passed back on the next watch). */
export interface Position {
  terminalId?: string;
  terminalCursor?: string;
  jobId?: string;
  jobCursor?: string;
  version?: string;
}

/** The job a model's tool result names (run_command's result has a jobId). */
export function jobOfResult(structured: unknown): string | undefined {
  if (typeof structured !== 'object' || structured === null) return undefined;
  const jobId = (structured as { jobId?: unknown }).jobId;
  return typeof jobId === 'string' && /^g\d+\.job\d+$/.test(jobId) ? jobId : undefined;
}
