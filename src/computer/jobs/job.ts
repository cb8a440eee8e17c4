/**
 * One command job on the host side: retained output per stream, the observed exit, and the
 * one result shape every job tool returns.
 */
import { sleep } from '../../shared/abort.js';
import type { Disposable } from '../../shared/disposable.js';
import { Emitter } from '../../shared/emitter.js';
import { PaddockError } from '../../shared/errors.js';
import { utf8Inner, utf8SafeLength } from '../../shared/text.js';
import { decodeJobCursor, encodeJobCursor } from '../cursors.js';
import type { JobId } from '../ids.js';
import { OutputBuffer } from '../output-buffer.js';

/**
 * Where a job stands, in one word: `running` until its root's exit is observed, then
 * `timed_out` (killed at timeoutMs), `cancelled` (cancel_job), `killed` (ended by a signal: its
 * own, a relaunch or the end of its computer) or `exited` (ended by itself; see exitCode).
 */
export type JobState = 'running' | 'exited' | 'killed' | 'timed_out' | 'cancelled';

/** The result shape of run_command, read_job and shell. */
export interface JobResult {
  [key: string]: unknown;
  jobId: string;
  state: JobState;
  /** A long-running service: run_command's `background`, never killed by a timeout. */
  background: boolean;
  stdout: string;
  stderr: string;
  nextCursor: string;
  /** Exit code of the root process; null until its exit is observed (or when a signal ended it). */
  exitCode: number | null;
  /** Signal that ended the root process, e.g. `SIGKILL`. */
  signal: string | null;
  timedOut: boolean;
  canceled: boolean;
  /** True once the root's termination was observed; output of leftover descendants may follow. */
  terminationObserved: boolean;
  durationMs: number;
  /** Tool channel calls made by the job. */
  toolCalls: number;
  /**
   * Connections of the job the egress policy refused, each destination once (oldest first, at
   * most MAX_EGRESS_REFUSED): what to ask the operator to allow.
   */
  egressRefused: { host: string; port: number; rule: string }[];
}

/** Refused destinations a job's result lists. */
export const MAX_EGRESS_REFUSED = 20;

export class Job {
  readonly stdout: OutputBuffer;
  readonly stderr: OutputBuffer;
  readonly startedAt = performance.now();
  /** A service started with run_command's `background`: no timeout ends it. */
  readonly background: boolean;
  private state = {
    exitCode: null as number | null,
    signal: null as string | null,
    timedOut: false,
    canceled: false,
    terminationObserved: false,
    toolCalls: 0,
  };
  private readonly refused: { host: string; port: number; rule: string }[] = [];
  /** Whether each stream has ended (EOF from the guest). */
  private readonly ended = { stdout: false, stderr: false };
  private endedAt: number | null = null;
  private readonly exited: Promise<void>;
  private wakeExit: () => void = () => undefined;
  /** New output or the exit: what read_job's waitMs waits for. */
  private readonly changes = new Emitter();

  constructor(
    readonly id: JobId,
    readonly generation: number,
    /** The job's number in its generation (its stream id on the guest link). */
    readonly n: number,
    retentionBytes: number,
    /** One-line summary of what the job runs. */
    readonly command = '',
    how: { background?: boolean | undefined } = {},
  ) {
    this.background = how.background === true;
    this.stdout = new OutputBuffer(retentionBytes);
    this.stderr = new OutputBuffer(retentionBytes);
    this.exited = new Promise((resolve) => {
      this.wakeExit = resolve;
    });
  }

  get exitCode(): number | null {
    return this.state.exitCode;
  }
  get signal(): string | null {
    return this.state.signal;
  }
  get timedOut(): boolean {
    return this.state.timedOut;
  }
  get canceled(): boolean {
    return this.state.canceled;
  }
  get terminationObserved(): boolean {
    return this.state.terminationObserved;
  }
  get toolCalls(): number {
    return this.state.toolCalls;
  }

  /** The job's state in one word (see JobState). */
  get lifecycle(): JobState {
    const s = this.state;
    if (!s.terminationObserved) return 'running';
    if (s.timedOut) return 'timed_out';
    if (s.canceled) return 'cancelled';
    if (s.signal !== null && s.exitCode === null) return 'killed';
    return 'exited';
  }

  /** Appends bytes the guest sent on one of the job's streams. */
  append(fd: 'stdout' | 'stderr', bytes: Buffer): void {
    this[fd].append(bytes);
    this.wakeChange();
  }

  /** A stream ended (EOF from the guest). */
  endStream(fd: 'stdout' | 'stderr'): void {
    this.ended[fd] = true;
  }

  /** Whether both streams ended (EOF from the guest). */
  get outputEnded(): boolean {
    return this.ended.stdout && this.ended.stderr;
  }

  /** The job ran past its timeout (its family is being killed). */
  markTimedOut(): void {
    this.state.timedOut = true;
  }

  /** A caller cancelled the job (its family is being killed). */
  markCanceled(): void {
    this.state.canceled = true;
  }

  /** Tool channel calls made so far. */
  noteToolCalls(count: number): void {
    this.state.toolCalls = count;
  }

  /**
   * A connection of the job was refused by the egress policy: the destination joins the result's
   * `egressRefused` and, the first time, `line` goes to the job's stderr so the program's own
   * error is followed by the reason. Returns whether the destination was new.
   */
  noteEgressRefused(refused: { host: string; port: number; rule: string }, line: string): boolean {
    const known = this.refused.some(
      (r) => r.host === refused.host && r.port === refused.port && r.rule === refused.rule,
    );
    if (known) return false;
    if (this.refused.length < MAX_EGRESS_REFUSED) this.refused.push({ ...refused });
    this.stderr.append(Buffer.from(`${line}\n`));
    return true;
  }

  /** Records the root's termination and wakes every waiter. */
  observeExit(exitCode: number | null, signal: string | null): void {
    if (this.state.terminationObserved) return;
    Object.assign(this.state, { exitCode, signal, terminationObserved: true });
    this.endedAt = performance.now();
    this.wakeExit();
    this.wakeChange();
  }

  /**
   * Resolves as soon as there is output after `cursor` (any output when none is given), the
   * root's exit is observed, `waitMs` passes or `signal` aborts.
   */
  async waitForChange(cursor: string | undefined, waitMs: number, signal?: AbortSignal): Promise<void> {
    if (waitMs <= 0 || this.terminationObserved || this.hasOutputAfter(cursor)) return;
    const stop = new AbortController();
    let subscription: Disposable | undefined;
    const changed = new Promise<void>((resolve) => {
      subscription = this.changes.on(resolve);
    });
    await Promise.race([
      changed,
      sleep(waitMs, signal ? AbortSignal.any([signal, stop.signal]) : stop.signal),
    ]);
    stop.abort();
    subscription?.dispose();
  }

  private hasOutputAfter(cursor: string | undefined): boolean {
    if (cursor === undefined)
      return (
        this.stdout.endOffset > this.stdout.startOffset || this.stderr.endOffset > this.stderr.startOffset
      );
    const c = decodeJobCursor(cursor, this.id);
    return this.stdout.endOffset > c.stdout || this.stderr.endOffset > c.stderr;
  }

  private wakeChange(): void {
    this.changes.emit();
  }

  /** The last `maxBytes` of each stream as text, cut at UTF-8 boundaries (what the dock shows). */
  tail(maxBytes: number): { stdout: string; stderr: string; outputBytes: number } {
    const last = (buffer: OutputBuffer) =>
      utf8Inner(buffer.read(Math.max(buffer.startOffset, buffer.endOffset - maxBytes), maxBytes).bytes);
    return {
      stdout: last(this.stdout),
      stderr: last(this.stderr),
      outputBytes: this.stdout.endOffset + this.stderr.endOffset,
    };
  }

  /** Resolves when the root exits or after `waitMs`, whichever is first (or when `signal` aborts). */
  async waitForExit(waitMs: number, signal?: AbortSignal): Promise<void> {
    if (this.terminationObserved || waitMs <= 0) return;
    const stop = new AbortController();
    const waited = sleep(waitMs, signal ? AbortSignal.any([signal, stop.signal]) : stop.signal);
    await Promise.race([this.exited, waited]);
    stop.abort();
  }

  /** Milliseconds from start to the observed exit (or to now while running). */
  get durationMs(): number {
    return Math.round((this.endedAt ?? performance.now()) - this.startedAt);
  }

  /**
   * Output from `cursor` (or the oldest retained output), at most `byteLimit` bytes across both
   * streams, split fairly when both have data; never cuts a UTF-8 sequence in the middle.
   */
  read(cursor: string | undefined, byteLimit: number): JobResult {
    let from = { stdout: this.stdout.startOffset, stderr: this.stderr.startOffset };
    if (cursor !== undefined) {
      const c = decodeJobCursor(cursor, this.id);
      if (c.stdout > this.stdout.endOffset || c.stderr > this.stderr.endOffset) {
        throw new PaddockError(
          'INVALID_ARGUMENT',
          'The cursor points past the output of this job; pass a nextCursor that read_job returned.',
        );
      }
      if (c.stdout < this.stdout.startOffset || c.stderr < this.stderr.startOffset) {
        throw new PaddockError(
          'OUTPUT_EXPIRED',
          `Output of ${this.id} after this cursor was dropped (each stream keeps its newest ${this.stdout.capacityBytes} bytes); continue from oldestCursor.`,
          {
            oldestCursor: encodeJobCursor({
              jobId: this.id,
              stdout: Math.max(c.stdout, this.stdout.startOffset),
              stderr: Math.max(c.stderr, this.stderr.startOffset),
            }),
          },
        );
      }
      from = { stdout: c.stdout, stderr: c.stderr };
    }
    const availOut = this.stdout.endOffset - from.stdout;
    const availErr = this.stderr.endOffset - from.stderr;
    const half = Math.ceil(byteLimit / 2);
    const takeOut = Math.min(availOut, Math.max(half, byteLimit - availErr));
    const takeErr = Math.min(availErr, byteLimit - takeOut);
    const out = this.slice(this.stdout, from.stdout, takeOut, this.ended.stdout);
    const err = this.slice(this.stderr, from.stderr, takeErr, this.ended.stderr);
    return {
      jobId: this.id,
      state: this.lifecycle,
      background: this.background,
      stdout: out.text,
      stderr: err.text,
      nextCursor: encodeJobCursor({ jobId: this.id, stdout: out.next, stderr: err.next }),
      exitCode: this.exitCode,
      signal: this.signal,
      timedOut: this.timedOut,
      canceled: this.canceled,
      terminationObserved: this.terminationObserved,
      durationMs: this.durationMs,
      toolCalls: this.toolCalls,
      egressRefused: this.refused.map((r) => ({ ...r })),
    };
  }

  private slice(
    buffer: OutputBuffer,
    from: number,
    take: number,
    ended: boolean,
  ): { text: string; next: number } {
    if (take <= 0) return { text: '', next: from };
    const { bytes, nextOffset } = buffer.read(from, take);
    const atEnd = nextOffset >= buffer.endOffset && ended;
    const keep = atEnd ? bytes.length : utf8SafeLength(bytes);
    return { text: bytes.subarray(0, keep).toString('utf8'), next: from + keep };
  }
}
