/**
 * The guest's answer to each call of the protocol, as a table keyed by the operation: a handler
 * gets its operation's typed arguments (and the call's attachment, if any) and returns its typed
 * result, so an operation added to `callSchemas` and handled nowhere is a compile error. Both
 * guests use it: the agent inside a bwrap computer, and a browser computer's guest on the server.
 */
import type { CallArgs, CallOp, CallResult } from './protocol.js';

/** A result whose bytes travel as a binary attachment of the reply. */
export class WithAttachment<T> {
  constructor(
    readonly value: T,
    readonly attachment: Buffer,
  ) {}
}

/** What a handler answers: the result, or the result with bytes attached. */
export type Answer<Op extends CallOp> = CallResult<Op> | WithAttachment<CallResult<Op>>;

/** One handler per operation. */
export type CallHandlers = {
  [Op in CallOp]: (args: CallArgs<Op>, attachment: Buffer | undefined) => Answer<Op> | Promise<Answer<Op>>;
};

/**
 * Runs the handler of `op` (which came from the host: the guest trusts its host and does not
 * validate it again); an operation this table does not know is `unknown(op)`.
 */
export async function answerCall(
  handlers: CallHandlers,
  op: string,
  args: unknown,
  attachment: Buffer | undefined,
  unknown: (op: string) => Error,
): Promise<Answer<CallOp>> {
  if (!Object.hasOwn(handlers, op)) throw unknown(op);
  const handler = handlers[op as CallOp] as (a: unknown, b: Buffer | undefined) => Promise<Answer<CallOp>>;
  return handler(args, attachment);
}
