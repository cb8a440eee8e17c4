import { timingSafeEqual } from 'node:crypto';
import { TOOL_CHANNEL_ROOT } from '../guest/account.js';
import type { CallerContext } from '../tools/tool.js';

/** A frame the guest took out of a job's stderr (see src/guest/channel-scanner.ts). */
export type ChannelFrame =
  | { kind: 'request'; id: string; payload: string }
  | { kind: 'oversized'; id: string }
  | { kind: 'malformed'; id: string | null; reason: string };

/** The host side of one job's tool channel (implemented in src/channel/, wired by main.ts). */
export interface ToolChannel {
  /** The per-command nonce a frame must carry. */
  readonly nonce: string;
  /** Calls made so far. */
  readonly toolCalls: number;
  /** Answers one frame: the reply line for the client's FIFO, or null when it cannot be answered. */
  handle(frame: ChannelFrame): Promise<string | null>;
  /** The job's root exited: later calls fail at once. */
  close(): void;
}

/** Who a job's channel acts for. */
export interface ToolChannelGrant {
  /** The caller that started the command. */
  caller: CallerContext;
  /** Invocation id of the `run_command` / `shell` call (parent of every channel call). */
  parentId: string;
  jobId: string;
  /** Epoch ms: the command's timeout bounds every call. */
  deadline: number;
}

/** Opens a channel for a job; null when the caller has none to offer. */
export type ToolChannelFactory = (grant: ToolChannelGrant) => ToolChannel | null;

/** The guest directory of a job's channel FIFOs (the private /tmp of the computer). */
export function channelDir(jobNumber: number): string {
  return `${TOOL_CHANNEL_ROOT}/${jobNumber}`;
}

/** Whether a frame's nonce is the one the host made for the job (constant time). */
export function nonceMatches(got: string, expected: string): boolean {
  const a = Buffer.from(got);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}
