/**
 * The audit store's subscription, the same for every implementation: rows written through
 * this process are delivered at once; rows other processes write to the same store are found
 * by polling `ended` while anyone listens. Each row is delivered once, whichever way it came.
 */
import type { Disposable } from '../shared/disposable.js';
import { Emitter } from '../shared/emitter.js';
import type { Logger } from '../shared/logger.js';
import type { StoredInvocation } from './audit.js';

/** How often listeners get rows that other processes wrote (they get their own at once). */
export const DEFAULT_FEED_INTERVAL_MS = 500;
const PAGE = 500;

export interface EndedFeedOptions {
  /** The store's `ended`. */
  read(afterEndSeq: number, limit: number): Promise<StoredInvocation[]>;
  /** The store's `lastEndSeq`. */
  last(): Promise<number>;
  logger: Logger;
  intervalMs?: number;
}

type Listener = (row: StoredInvocation) => void;

/** Listeners of ended rows, local and polled. */
export class EndedFeed {
  private readonly listeners: Emitter<StoredInvocation>;
  /**
   * End seqs above the poll's cursor already delivered by `push`: the poll skips them. Seqs at
   * or below the cursor are forgotten, since the poll never reads them again and `push` skips
   * them; so the set holds only what this process wrote since the last poll.
   */
  private readonly delivered = new Set<number>();
  private cursor: number | undefined;
  private timer: NodeJS.Timeout | undefined;
  private polling = false;
  private closed = false;

  constructor(private readonly options: EndedFeedOptions) {
    this.listeners = new Emitter((e, row) => this.listenerFailed(row, e));
  }

  subscribe(listener: Listener): Disposable {
    const sub = this.listeners.on(listener);
    if (this.listeners.size === 1) this.start();
    let disposed = false;
    return {
      dispose: () => {
        if (disposed) return;
        disposed = true;
        sub.dispose();
        if (this.listeners.size === 0) this.stop();
      },
    };
  }

  /** A row this process just committed with an outcome: delivered now, skipped by the poll. */
  push(row: StoredInvocation): void {
    if (this.listeners.size === 0) return;
    if (row.endSeq !== null) {
      // the poll got there first (its cursor passed the row, so it delivered it)
      if (this.cursor !== undefined && row.endSeq <= this.cursor) return;
      if (this.delivered.has(row.endSeq)) return;
      this.delivered.add(row.endSeq);
    }
    this.deliver(row);
  }

  /** Forgets the seqs the poll's cursor has passed. */
  private forgetPassed(): void {
    const cursor = this.cursor;
    if (cursor === undefined) return;
    for (const seq of this.delivered) if (seq <= cursor) this.delivered.delete(seq);
  }

  /** Stops polling for good. */
  close(): void {
    this.closed = true;
    this.stop();
  }

  private start(): void {
    if (this.closed) return;
    this.cursor = undefined;
    this.delivered.clear();
    this.options
      .last()
      .then((last) => {
        if (this.listeners.size === 0 || this.closed) return;
        this.cursor ??= last;
        this.schedule();
      })
      .catch((e: unknown) => {
        this.failed('audit.feed_failed', e);
        this.schedule();
      });
  }

  private stop(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    this.cursor = undefined;
    this.delivered.clear();
  }

  private schedule(): void {
    if (this.closed || this.listeners.size === 0 || this.timer) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      void this.poll();
    }, this.options.intervalMs ?? DEFAULT_FEED_INTERVAL_MS);
    this.timer.unref();
  }

  private async poll(): Promise<void> {
    if (this.polling) return;
    this.polling = true;
    try {
      if (this.cursor === undefined) this.cursor = await this.options.last();
      for (;;) {
        const rows = await this.options.read(this.cursor, PAGE);
        for (const row of rows) {
          const endSeq = row.endSeq ?? this.cursor;
          if (!this.delivered.has(endSeq)) this.deliver(row);
          this.cursor = Math.max(this.cursor, endSeq);
        }
        this.forgetPassed();
        if (rows.length < PAGE || this.listeners.size === 0) break;
      }
    } catch (e) {
      this.failed('audit.feed_failed', e);
    } finally {
      this.polling = false;
      this.schedule();
    }
  }

  private deliver(row: StoredInvocation): void {
    this.listeners.emit(row);
  }

  private listenerFailed(row: StoredInvocation, e: unknown): void {
    this.options.logger.warn('audit.listener_failed', {
      invocationId: row.id,
      error: e instanceof Error ? e.message : String(e),
    });
  }

  private failed(event: string, e: unknown): void {
    this.options.logger.warn(event, { error: e instanceof Error ? e.message : String(e) });
  }
}
