/** Median of a list of numbers. */
export function median(values: number[]): number {
  const s = [...values].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
}

/** The p-th percentile (0..100). */
export function percentile(values: number[], p: number): number {
  const s = [...values].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]!;
}

/** Times `fn` `n` times after `warmup` runs; returns per-call milliseconds. */
export async function timeCalls(
  n: number,
  fn: () => Promise<unknown>,
  warmup = Math.min(200, n),
): Promise<number[]> {
  for (let i = 0; i < warmup; i++) await fn();
  const out: number[] = [];
  for (let i = 0; i < n; i++) {
    const t = performance.now();
    await fn();
    out.push(performance.now() - t);
  }
  return out;
}

/**
 * Times two functions call by call in turn (a, b, a, b, …) after `warmup` rounds, so both see
 * the same machine load; returns per-call milliseconds of each.
 */
export async function timeAlternately(
  n: number,
  a: () => Promise<unknown>,
  b: () => Promise<unknown>,
  warmup = Math.min(200, n),
): Promise<[number[], number[]]> {
  for (let i = 0; i < warmup; i++) {
    await a();
    await b();
  }
  const ta: number[] = [];
  const tb: number[] = [];
  for (let i = 0; i < n; i++) {
    let t = performance.now();
    await a();
    ta.push(performance.now() - t);
    t = performance.now();
    await b();
    tb.push(performance.now() - t);
  }
  return [ta, tb];
}
