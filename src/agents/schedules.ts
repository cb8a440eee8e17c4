import { Cron } from 'croner';
import type { ScheduleDefinition } from './types.js';

/** Cron field counts accepted: 5 (minute first) or 6 (seconds first). */
export const CRON_MODE = '5-or-6-parts' as const;

type ScheduleInput = string | { cron: string; timezone?: string | undefined; input?: string | undefined };

/** A pattern-only Cron (no timer) for an entry; throws croner's error for an invalid one. */
export function cronOf(schedule: Pick<ScheduleDefinition, 'cron' | 'timezone'>): Cron {
  return new Cron(schedule.cron, {
    mode: CRON_MODE,
    ...(schedule.timezone ? { timezone: schedule.timezone } : {}),
  });
}

/**
 * Validates the `schedules` entries of an AGENT.md. Returns the definitions and one
 * `schedules.<i>: …` problem per bad entry (invalid expression, unknown time zone, an
 * expression that never fires).
 */
export function parseSchedules(entries: readonly ScheduleInput[]): {
  schedules: ScheduleDefinition[];
  problems: string[];
} {
  const schedules: ScheduleDefinition[] = [];
  const problems: string[] = [];
  entries.forEach((entry, i) => {
    const spec = typeof entry === 'string' ? { cron: entry } : entry;
    const at = `schedules.${i}`;
    if (spec.timezone !== undefined && !isTimeZone(spec.timezone)) {
      problems.push(
        `${at}.timezone: "${spec.timezone}" is not a known IANA time zone; use a name such as UTC or Europe/Berlin`,
      );
      return;
    }
    let next: Date | null;
    try {
      next = cronOf(spec).nextRun();
    } catch (e) {
      problems.push(
        `${at}: invalid cron expression "${spec.cron}" (${(e as Error).message.replace(/^CronPattern: /, '')}); ` +
          'write 5 fields (minute hour day month weekday, e.g. "0 9 * * 1-5") or 6 with seconds first',
      );
      return;
    }
    if (!next) {
      problems.push(`${at}: "${spec.cron}" never fires; check the day and month fields`);
      return;
    }
    schedules.push({
      cron: spec.cron,
      ...(spec.timezone ? { timezone: spec.timezone } : {}),
      ...(spec.input !== undefined ? { input: spec.input } : {}),
      key: `${i}:${spec.cron}@${spec.timezone ?? 'local'}`,
    });
  });
  return { schedules, problems };
}

function isTimeZone(zone: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: zone });
    return true;
  } catch {
    return false;
  }
}
