/** Every error code a caller can see. String constants, stable across releases. */
export const ERROR_CODES = [
  'INVALID_ARGUMENT',
  'POLICY_DENIED',
  'PERMISSION_REQUIRED',
  'NOT_FOUND',
  'FILE_EXISTS',
  'OUTPUT_EXPIRED',
  'STALE_GENERATION',
  'NOT_RUNNING',
  'UNSUPPORTED_CAPABILITY',
  'LIMIT_EXCEEDED',
  'TIMEOUT',
  'CHANNEL_CLOSED',
  'IDEMPOTENCY_CONFLICT',
  'UPSTREAM_ERROR',
  'TOOL_QUARANTINED',
  'TERMINAL_HELD_BY_PERSON',
  'INTERNAL',
] as const;

export type ErrorCode = (typeof ERROR_CODES)[number];

/** HTTP status for each code; the type forces every code to be mapped. */
export const ERROR_HTTP_STATUS: Record<ErrorCode, number> = {
  INVALID_ARGUMENT: 400,
  POLICY_DENIED: 403,
  PERMISSION_REQUIRED: 403,
  NOT_FOUND: 404,
  FILE_EXISTS: 409,
  OUTPUT_EXPIRED: 410,
  STALE_GENERATION: 410,
  NOT_RUNNING: 409,
  UNSUPPORTED_CAPABILITY: 501,
  LIMIT_EXCEEDED: 429,
  TIMEOUT: 504,
  CHANNEL_CLOSED: 410,
  IDEMPOTENCY_CONFLICT: 409,
  UPSTREAM_ERROR: 502,
  // the tool exists but a person must review its changed definition first
  TOOL_QUARANTINED: 409,
  // a person took control of the terminal; the agent's input waits for them
  TERMINAL_HELD_BY_PERSON: 423,
  INTERNAL: 500,
};

/**
 * The one error class of Paddock. `message` always says what to do next;
 * `details` carries machine-readable extras (e.g. `oldestCursor`, `rule`).
 */
export class PaddockError extends Error {
  readonly code: ErrorCode;
  readonly details: Record<string, unknown>;

  constructor(code: ErrorCode, message: string, details: Record<string, unknown> = {}) {
    super(message);
    this.name = 'PaddockError';
    this.code = code;
    this.details = details;
  }

  /** The JSON body a caller sees: `{ code, message, ...details }`. */
  toJSON(): Record<string, unknown> {
    return { code: this.code, message: this.message, ...this.details };
  }
}

export function isPaddockError(e: unknown): e is PaddockError {
  return e instanceof PaddockError;
}

/**
 * Turns anything thrown into a PaddockError without leaking a stack trace:
 * unknown errors become INTERNAL with a generic message.
 */
export function toPaddockError(e: unknown): PaddockError {
  if (e instanceof PaddockError) return e;
  if (e instanceof Error && e.name === 'AbortError') {
    return new PaddockError(
      'TIMEOUT',
      'The call was cancelled or ran past its deadline; retry with a longer timeout.',
    );
  }
  return new PaddockError(
    'INTERNAL',
    `Internal error: ${e instanceof Error ? e.message : String(e)}. Check the server logs; the call can be retried.`,
  );
}
