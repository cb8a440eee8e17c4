/** A duration as people write it: `90s`, `10m`, `2h`, `500ms`, or a number of seconds. */
const DURATION = /^(\d+(?:\.\d+)?)\s*(ms|s|m|h)?$/;
const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/** Milliseconds of a duration text, or null when it is not one (`10m` → 600000). */
export function parseDurationMs(text: string | number): number | null {
  if (typeof text === 'number') return Number.isFinite(text) && text >= 0 ? text * 1000 : null;
  const match = DURATION.exec(text.trim());
  if (!match) return null;
  return Math.round(Number(match[1]) * (UNIT_MS[match[2] ?? 's'] ?? 1000));
}
