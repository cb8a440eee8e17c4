import { PaddockError } from '../shared/errors.js';

const UNIT_MS: Record<string, number> = {
  ms: 1,
  s: 1000,
  m: 60_000,
  h: 3_600_000,
  d: 86_400_000,
  w: 604_800_000,
};

/** One or more `<number><unit>` parts, e.g. `45s`, `1h30m`, `2d`. */
const DURATION = /^(?:\d+(?:ms|s|m|h|d|w))+$/;
const DURATION_PART = /(\d+)(ms|s|m|h|d|w)/g;

/** `2025-01-31`, `2025-01-31T09:00`, `2025-01-31 09:00:00.5Z`, `2025-01-31T09:00:00+01:00`. */
const ISO =
  /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.\d{1,9})?)?(Z|[+-]\d{2}:?\d{2})?)?$/i;

/**
 * Reads a `--since` value as epoch milliseconds. Accepts a duration back from `now`
 * (`45s`, `30m`, `1h`, `2d`, `1w`, `500ms`, or combined like `1h30m`) or an ISO 8601 date or
 * date-time. A date alone means midnight UTC; a date-time without an offset is local time
 * (as `Date.parse` reads it). Throws INVALID_ARGUMENT for anything else.
 */
export function parseSince(text: string, now: number = Date.now()): number {
  const value = typeof text === 'string' ? text.trim() : '';
  if (DURATION.test(value)) {
    let totalMs = 0;
    for (const [, amount, unit] of value.matchAll(DURATION_PART)) {
      totalMs += Number(amount) * (UNIT_MS[unit ?? ''] ?? 0);
    }
    return Math.max(0, now - totalMs);
  }
  const iso = ISO.exec(value);
  if (iso && validCalendar(iso)) {
    const ms = Date.parse(value.replace(' ', 'T'));
    if (Number.isFinite(ms)) return ms;
  }
  throw new PaddockError(
    'INVALID_ARGUMENT',
    `Cannot read "${String(text)}" as a point in time. Use a duration back from now such as 45s, 30m, 1h or 2d, or an ISO timestamp such as 2025-01-31T09:00:00Z.`,
    { argument: 'since' },
  );
}

/** Rejects dates that `Date.parse` would roll over (2025-02-30) and out-of-range times. */
function validCalendar(m: RegExpExecArray): boolean {
  const [year, month, day, hour, minute, second] = [m[1], m[2], m[3], m[4], m[5], m[6]].map((v) =>
    v === undefined ? 0 : Number(v),
  ) as [number, number, number, number, number, number];
  if (month < 1 || month > 12 || day < 1) return false;
  const daysInMonth = new Date(Date.UTC(year, month, 0)).getUTCDate();
  return day <= daysInMonth && hour <= 23 && minute <= 59 && second <= 59;
}
