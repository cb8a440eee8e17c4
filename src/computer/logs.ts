/**
 * The computer's system log: a ring buffer of events (boot, launch, job start and exit, policy
 * denials, errors) that `read_logs` pages through by cursor. Each entry is also written to the
 * server's own logger.
 */

import { PaddockError } from '../shared/errors.js';
import type { Logger } from '../shared/logger.js';
import { redactSecrets, redactText } from '../shared/redact.js';
import { decodeLogCursor, encodeLogCursor } from './cursors.js';

/** Levels of the computer log (the reference's set; `ok` marks a success worth seeing). */
export const LOG_LEVELS = ['info', 'warn', 'err', 'ok', 'debug'] as const;
export type ComputerLogLevel = (typeof LOG_LEVELS)[number];

/** One log entry. */
export interface ComputerLogEntry {
  seq: number;
  /** Monotonic milliseconds since the computer service booted. */
  sinceBootMs: number;
  level: ComputerLogLevel;
  /** `domain.verb`, e.g. `job.exit`. */
  event: string;
  message: string;
  generation?: number;
  jobId?: string;
}

/** A page of entries. */
export interface LogPage {
  entries: ComputerLogEntry[];
  nextCursor: string;
}

/** Default number of retained entries. */
export const DEFAULT_LOG_CAPACITY = 2000;

export class ComputerLog {
  private readonly entries: ComputerLogEntry[] = [];
  private nextSeq = 1;
  private readonly bootedAt: number;

  constructor(
    private readonly logger: Logger,
    private readonly capacity = DEFAULT_LOG_CAPACITY,
    private readonly now: () => number = () => performance.now(),
    /** Hears every entry as it is added (the computer's `log` events). */
    private readonly onEntry: (entry: ComputerLogEntry) => void = () => undefined,
  ) {
    this.bootedAt = now();
  }

  /** Records an event. */
  add(
    level: ComputerLogLevel,
    event: string,
    message: string,
    fields: { generation?: number; jobId?: string } = {},
  ): void {
    const entry: ComputerLogEntry = {
      seq: this.nextSeq++,
      sinceBootMs: Math.round(this.now() - this.bootedAt),
      level,
      event,
      // messages reach the dock and read_logs: a secret in a command line stays out of both
      message: redactText(message, redactSecrets),
      ...fields,
    };
    this.entries.push(entry);
    if (this.entries.length > this.capacity) this.entries.shift();
    this.onEntry(entry);
    const mirror = { message, ...fields };
    if (level === 'err') this.logger.error(event, mirror);
    else if (level === 'warn') this.logger.warn(event, mirror);
    else if (level === 'debug') this.logger.debug(event, mirror);
    else this.logger.info(event, mirror);
  }

  /**
   * Up to `limit` entries after `cursor` (from the oldest retained when absent), optionally only
   * those of one level. OUTPUT_EXPIRED when entries after the cursor were already dropped.
   */
  read(options: { cursor?: string; limit: number; level?: ComputerLogLevel }): LogPage {
    const after = options.cursor === undefined ? 0 : decodeLogCursor(options.cursor);
    if (after >= this.nextSeq) {
      throw new PaddockError(
        'INVALID_ARGUMENT',
        'The cursor is ahead of the log; pass a nextCursor that read_logs returned.',
      );
    }
    const oldest = this.entries[0]?.seq ?? this.nextSeq;
    if (options.cursor !== undefined && after < oldest - 1) {
      throw new PaddockError(
        'OUTPUT_EXPIRED',
        'Log entries after this cursor were dropped from the ring buffer; continue from oldestCursor.',
        { oldestCursor: encodeLogCursor(oldest - 1) },
      );
    }
    const out: ComputerLogEntry[] = [];
    let last = after;
    for (
      let i = Math.max(0, after - oldest + 1);
      i < this.entries.length && out.length < options.limit;
      i++
    ) {
      const entry = this.entries[i]!;
      last = entry.seq;
      if (!options.level || entry.level === options.level) out.push(entry);
    }
    return { entries: out, nextCursor: encodeLogCursor(last) };
  }
}
