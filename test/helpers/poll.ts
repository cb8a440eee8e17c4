/**
 * The one way tests wait for a state: poll a check until it holds or a deadline passes. Never a
 * fixed sleep followed by one read (that fails on a slower machine); the deadline only bounds a
 * test that is already failing.
 */

/**
 * Polls `check` until it returns a truthy value, which it returns; past `timeoutMs` throws
 * "timed out waiting for `what`". The pause between checks starts at 2 ms and doubles up to
 * `maxIntervalMs`.
 */
export async function pollUntil<T>(
  check: () => T | Promise<T>,
  what: string,
  timeoutMs = 15_000,
  maxIntervalMs = 50,
): Promise<NonNullable<T>> {
  const deadline = Date.now() + timeoutMs;
  let pauseMs = 2;
  for (;;) {
    const value = await check();
    if (value) return value as NonNullable<T>;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, pauseMs));
    pauseMs = Math.min(pauseMs * 2, maxIntervalMs);
  }
}
