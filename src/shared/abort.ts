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

/**
 * `promise`, or a rejection with `onAbort()` as soon as `signal` aborts. Nothing is left
 * listening on the signal once either settles.
 */
export function raceAbort<T>(
  promise: Promise<T>,
  signal: AbortSignal | undefined,
  onAbort: () => Error,
): Promise<T> {
  if (!signal) return promise;
  if (signal.aborted) return Promise.reject(onAbort());
  const stop = new AbortController();
  const aborted = delay(2_147_483_647, undefined, {
    signal: AbortSignal.any([signal, stop.signal]),
    ref: false,
  }).then(
    () => Promise.reject(onAbort()),
    () => Promise.reject(signal.aborted ? onAbort() : new Error('unreachable')),
  );
  aborted.catch(() => undefined);
  return Promise.race([promise, aborted]).finally(() => stop.abort());
}
