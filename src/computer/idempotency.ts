/**
 * `requestId` idempotency for act tools: the same key with the same arguments returns the first
 * outcome without a second effect; the same key with other arguments is IDEMPOTENCY_CONFLICT.
 * Keys live for the server's lifetime, bounded to the newest `capacity` keys.
 */
import { PaddockError } from '../shared/errors.js';

interface Entry {
  fingerprint: string;
  outcome: Promise<unknown>;
}

/** Stable JSON: object keys sorted, so argument order does not matter. */
export function stableJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(stableJson).join(',')}]`;
  if (value && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${stableJson(v)}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

export class IdempotencyCache {
  private readonly entries = new Map<string, Entry>();

  constructor(private readonly capacity = 10_000) {}

  /**
   * Runs `effect` once per (scope, requestId). Without a requestId it simply runs. The outcome —
   * result or error — is replayed to every later caller with the same key and arguments.
   */
  run<T>(
    scope: string,
    requestId: string | undefined,
    args: Record<string, unknown>,
    effect: () => Promise<T>,
  ): Promise<T> {
    if (requestId === undefined) return effect();
    const key = `${scope}\u0000${requestId}`;
    const { requestId: _omit, ...rest } = args;
    const fingerprint = stableJson(rest);
    const existing = this.entries.get(key);
    if (existing) {
      if (existing.fingerprint !== fingerprint) {
        return Promise.reject(
          new PaddockError(
            'IDEMPOTENCY_CONFLICT',
            `requestId "${requestId.slice(0, 128)}" was already used for ${scope} with other arguments; use a new requestId for a different request.`,
          ),
        );
      }
      return existing.outcome as Promise<T>;
    }
    const outcome = effect();
    outcome.catch(() => undefined);
    this.entries.set(key, { fingerprint, outcome });
    if (this.entries.size > this.capacity) {
      const oldest = this.entries.keys().next().value;
      if (oldest !== undefined) this.entries.delete(oldest);
    }
    return outcome;
  }
}
