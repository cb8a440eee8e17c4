/**
 * One terminal on the host side: the PTY's retained output (newest bytes, absolute offsets),
 * opaque cursors, reads for read_terminal_output and live delivery to the dock. Output is
 * kept as bytes; text handed out never ends inside a UTF-8 sequence.
 */

import type { Disposable } from '../../shared/disposable.js';
import { Emitter } from '../../shared/emitter.js';
import { PaddockError } from '../../shared/errors.js';
import { incompleteUtf8Tail, leadingContinuationBytes, utf8SafeLength } from '../../shared/text.js';
import type { TerminalId } from '../ids.js';
import { OutputBuffer } from '../output-buffer.js';
import { TerminalJournal } from './journal.js';

/** A piece of live or replayed output (the dock's TerminalChunk). */
export interface TerminalChunk {
  /** Output text, ANSI sequences included. */
  data: string;
  /** Where this chunk ends; resume after it. */
  cursor: string;
  /** Output between the requested position and this chunk was dropped by retention. */
  gap: boolean;
}

/** What list_terminals and the dock show of a terminal. */
export interface TerminalInfo {
  [key: string]: unknown;
  id: string;
  label: string;
  /** The PTY is spawned and takes input (not proof of a shell prompt). */
  ready: boolean;
  active: boolean;
  /** The shell ended; output stays readable, input is refused. */
  exited: boolean;
  exitCode: number | null;
  signal: string | null;
  cols: number;
  rows: number;
  /** The person who holds control (the agent's input is refused meanwhile), or null. */
  heldBy: string | null;
  /** When the hold lapses unless the person types or renews it (epoch ms), or null. */
  heldUntil: number | null;
}

/** What read_terminal_output answers. */
export interface TerminalRead {
  [key: string]: unknown;
  terminalId: string;
  output: string;
  nextCursor: string;
  /** Bytes of output after nextCursor already retained (read again at once to get them). */
  moreBytes: number;
  ready: boolean;
  exited: boolean;
  exitCode: number | null;
  signal: string | null;
}

/** Encodes a terminal cursor (an absolute output offset) as an opaque, URL-safe string. */
export function encodeTerminalCursor(terminalId: string, offset: number): string {
  return `t.${Buffer.from(`${terminalId}:${offset}`).toString('base64url')}`;
}

/** Decodes a terminal cursor and checks that it belongs to `terminalId`. */
export function decodeTerminalCursor(cursor: string, terminalId: string): number {
  const bad = () =>
    new PaddockError(
      'INVALID_ARGUMENT',
      'The cursor is not one read_terminal_output returned; pass its nextCursor, or omit the cursor to start at the oldest kept output.',
    );
  if (!cursor.startsWith('t.')) throw bad();
  const m = /^(g\d+\.term\d+):(\d{1,15})$/.exec(Buffer.from(cursor.slice(2), 'base64url').toString('utf8'));
  if (!m) throw bad();
  if (m[1] !== terminalId) {
    throw new PaddockError(
      'INVALID_ARGUMENT',
      `This cursor belongs to terminal ${m[1]}, not ${terminalId}; use cursors only with the terminal that returned them.`,
    );
  }
  return Number(m[2]);
}

export class Terminal {
  readonly output: OutputBuffer;
  ready = false;
  exitCode: number | null = null;
  signal: string | null = null;
  exited = false;
  cols: number;
  rows: number;
  /** Who typed what, resizes, holds, and when output arrived. */
  readonly journal: TerminalJournal;
  /** A person holding control, until when (see TerminalService.hold). */
  hold: { who: string; until: number } | null = null;
  /** Offset up to which live output went to subscribers (never inside a UTF-8 sequence). */
  private delivered = 0;
  private readonly subscribers = new Emitter<TerminalChunk>();

  constructor(
    readonly id: TerminalId,
    readonly generation: number,
    readonly n: number,
    readonly stream: number,
    readonly label: string,
    retentionBytes: number,
    size: { cols: number; rows: number },
  ) {
    this.output = new OutputBuffer(retentionBytes);
    this.cols = size.cols;
    this.rows = size.rows;
    this.journal = new TerminalJournal({ ...size, at: Date.now() });
  }

  /** Appends PTY output and hands the new text to every subscriber. */
  append(bytes: Buffer): void {
    const startBefore = this.output.startOffset;
    this.journal.output(this.output.endOffset);
    this.output.append(bytes);
    if (this.output.startOffset !== startBefore) this.journal.forgetOutputBefore(this.output.startOffset);
    if (this.subscribers.size === 0) {
      this.delivered = this.output.endOffset - pendingTail(this.output);
      return;
    }
    this.deliver(false);
  }

  /** The shell ended. */
  markExited(exitCode: number | null, signal: string | null): void {
    if (this.exited) return;
    this.exited = true;
    this.ready = false;
    this.exitCode = exitCode;
    this.signal = signal;
    this.deliver(true);
  }

  /** Output from `cursor` (or the oldest kept), at most `byteLimit` bytes. */
  read(cursor: string | undefined, byteLimit: number): TerminalRead {
    const start = this.alignedStart();
    let from = start;
    if (cursor !== undefined) {
      from = decodeTerminalCursor(cursor, this.id);
      if (from > this.output.endOffset) {
        throw new PaddockError(
          'INVALID_ARGUMENT',
          'The cursor points past the output of this terminal; pass a nextCursor that read_terminal_output returned.',
        );
      }
      if (from < this.output.startOffset) {
        throw new PaddockError(
          'OUTPUT_EXPIRED',
          `Output of ${this.id} after this cursor was dropped (a terminal keeps its newest ${this.output.capacityBytes} bytes); continue from oldestCursor.`,
          { oldestCursor: encodeTerminalCursor(this.id, start) },
        );
      }
    }
    const { text, next } = this.slice(from, byteLimit, this.exited);
    return {
      terminalId: this.id,
      output: text,
      nextCursor: encodeTerminalCursor(this.id, next),
      moreBytes: this.output.endOffset - next,
      ready: this.ready,
      exited: this.exited,
      exitCode: this.exitCode,
      signal: this.signal,
    };
  }

  /**
   * Replays kept output after `fromCursor` (all of it when absent; from the oldest kept byte with
   * `gap` when the cursor fell behind), then delivers live output in order until disposed.
   */
  subscribe(fromCursor: string | undefined, onData: (chunk: TerminalChunk) => void): Disposable {
    let from = this.alignedStart();
    let gap = false;
    if (fromCursor !== undefined) {
      const at = decodeTerminalCursor(fromCursor, this.id);
      if (at < this.output.startOffset) gap = true;
      else from = Math.min(at, this.delivered);
    }
    while (from < this.delivered) {
      const { text, next } = this.slice(from, Math.min(this.delivered - from, 64 * 1024), true);
      onData({ data: text, cursor: encodeTerminalCursor(this.id, next), gap });
      gap = false;
      from = next;
    }
    if (gap) onData({ data: '', cursor: encodeTerminalCursor(this.id, from), gap: true });
    return this.subscribers.on(onData);
  }

  /** Live subscribers (the dock's attached pages). */
  get subscriberCount(): number {
    return this.subscribers.size;
  }

  /** Sends the output after `delivered` to subscribers; `final` flushes a trailing partial character. */
  private deliver(final: boolean): void {
    const end = this.output.endOffset - (final ? 0 : pendingTail(this.output));
    let from = this.delivered;
    let gap = false;
    if (from < this.output.startOffset) {
      from = this.alignedStart();
      gap = true;
    }
    if (end <= from) return;
    this.delivered = end;
    const chunk = { data: this.output.text(from, end), cursor: encodeTerminalCursor(this.id, end), gap };
    this.subscribers.emit(chunk);
  }

  /** Up to `byteLimit` bytes from `from` as text, stopping before a cut UTF-8 sequence. */
  private slice(from: number, byteLimit: number, flush: boolean): { text: string; next: number } {
    const { bytes, nextOffset } = this.output.read(from, byteLimit);
    const atEnd = nextOffset >= this.output.endOffset && flush;
    const keep = atEnd ? bytes.length : utf8SafeLength(bytes);
    return { text: bytes.subarray(0, keep).toString('utf8'), next: from + keep };
  }

  /** The oldest kept offset, moved past continuation bytes of a character cut by retention. */
  private alignedStart(): number {
    const start = this.output.startOffset;
    if (start === 0) return 0;
    return start + leadingContinuationBytes(this.output.read(start, 3).bytes);
  }
}

/** Bytes at the end of the buffer that start a UTF-8 sequence not complete yet. */
function pendingTail(buffer: OutputBuffer): number {
  const from = Math.max(buffer.startOffset, buffer.endOffset - 4);
  const { bytes } = buffer.read(from, buffer.endOffset - from);
  return incompleteUtf8Tail(bytes);
}
