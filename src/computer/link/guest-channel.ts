/**
 * What the parts of a generation that talk to its guest need of it (the preview relay, egress):
 * calls to the agent, stream frames, the router their streams attach to, and whether it runs.
 * The generation answers it; those parts never see the rest of the generation.
 */
import type { FrameKindValue } from '../../guest/frames.js';
import type { CallArgs, CallOp, CallResult } from '../../guest/protocol.js';
import type { Lifecycle } from '../events.js';
import type { CallOptions, WithAttachment } from './guest-client.js';
import type { StreamRouter } from './stream-router.js';

/** One generation's guest link as its stream owners use it. */
export interface GuestChannel {
  readonly generation: number;
  readonly lifecycle: Lifecycle;
  /** Where a stream owner attaches (terminals, relayed sockets, egress). */
  readonly streams: StreamRouter;
  /** A call to the guest agent; NOT_RUNNING when the generation is not running. */
  call<Op extends CallOp>(
    op: Op,
    args: CallArgs<Op>,
    options?: CallOptions,
  ): Promise<WithAttachment<CallResult<Op>>>;
  /** Sends a stream frame; false when not running or congested. */
  sendFrame(kind: FrameKindValue, stream: number, fd: number, payload: Buffer): boolean;
}
