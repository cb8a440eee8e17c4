/**
 * Failures the guest reports to the host. The host turns them into PaddockErrors; the guest
 * cannot import host modules, so it carries only the code and the message.
 */
import type { GuestError, GuestErrorCode } from './protocol.js';

/** An expected failure of a guest operation, with a message that says what to do next. */
export class GuestFailure extends Error {
  readonly code: GuestErrorCode;
  readonly details: Record<string, unknown> | undefined;

  constructor(code: GuestErrorCode, message: string, details?: Record<string, unknown>) {
    super(message);
    this.code = code;
    this.details = details;
  }
}

/** Any thrown value as a wire error; unexpected ones become INTERNAL with their message only. */
export function toGuestError(e: unknown): GuestError {
  if (e instanceof GuestFailure) {
    return e.details
      ? { code: e.code, message: e.message, details: e.details }
      : { code: e.code, message: e.message };
  }
  const message = e instanceof Error ? e.message : String(e);
  return {
    code: 'INTERNAL',
    message: `The guest agent failed: ${message.slice(0, 1000)}. Retry; if it persists, relaunch the computer.`,
  };
}

/** The errno code of a Node system error, if any. */
export function errnoOf(e: unknown): string | undefined {
  return typeof e === 'object' && e !== null && 'code' in e && typeof e.code === 'string'
    ? e.code
    : undefined;
}
