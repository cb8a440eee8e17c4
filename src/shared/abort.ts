/**
 * Abortable waits, built on the platform's `node:timers/promises` (its timers take a signal and
 * reject with an AbortError). Callers map an abort to their own error.
 */
import { setTimeout as delay } from 'node:timers/promises';

/** Waits `ms` milliseconds; resolves early (false) when `signal` aborts, true after the full wait. */
export async function sleep(ms: number, signal?: AbortSignal): Promise<boolean> {
  try {
    await delay(ms, undefined, signal ? { signal } : undefined);
    return true;
  } catch (e) {
    if (signal?.aborted) return false;
    throw e;
  }
}

/** How {@link raceAbort} ends a race that `signal` won. */
export interface RaceAbortOptions {
  /** The error to reject with; default the signal's own reason. */
  error?: () => unknown;
  /**
   * How long the promise may still settle by itself after the abort (default 0): a task that
   * honours the signal then reports its own, more precise outcome.
   */
  graceMs?: number;
}

/**
 * `promise`, or a rejection as soon as `signal` aborts (after `graceMs`, if the promise has not
 * settled by then). Nothing is left listening on the signal, and no timer runs, once either
 * settles. The one abortable race of the code base.
 */
export function raceAbort<T>(
  promise: Promise<T>,
  signal: AbortSignal | undefined,
  options: RaceAbortOptions = {},
): Promise<T> {
  if (!signal) return promise;
  const reason = () => (options.error ? options.error() : signal.reason);
  const graceMs = options.graceMs ?? 0;
  if (signal.aborted && graceMs === 0) return Promise.reject(reason());
  return new Promise<T>((resolve, reject) => {
    let timer: NodeJS.Timeout | undefined;
    const onAbort = () => {
      if (graceMs === 0) reject(reason());
      else timer = setTimeout(() => reject(reason()), graceMs);
    };
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener('abort', onAbort);
    };
    if (signal.aborted) onAbort();
    else signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (value) => {
        done();
        resolve(value);
      },
      (error: unknown) => {
        done();
        reject(error);
      },
    );
  });
}
