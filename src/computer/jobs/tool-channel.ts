import { timingSafeEqual } from 'node:crypto';
import type { ChannelGrant } from '../../channel/session.js';
import { TOOL_CHANNEL_ROOT } from '../../guest/account.js';
import type { ChannelFrame } from '../../guest/protocol.js';
import type { PaddockError } from '../../shared/errors.js';

/** The host side of one job's tool channel (implemented in src/channel/, wired by main.ts). */
export interface ToolChannel {
  /** The per-command nonce a frame must carry. */
  readonly nonce: string;
  /** Calls made so far. */
  readonly toolCalls: number;
  /** Answers one frame: the reply line for the client's FIFO, or null when it cannot be answered. */
  handle(frame: ChannelFrame): Promise<string | null>;
  /**
   * The job's root exited (or its caller was revoked, `reason`): later calls fail at once with
   * the reason (CHANNEL_CLOSED by default), calls under way are cancelled.
   */
  close(reason?: PaddockError): void;
}

/** Opens a channel for a job; null when the caller has none to offer. */
export type ToolChannelFactory = (grant: ChannelGrant) => ToolChannel | null;

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
