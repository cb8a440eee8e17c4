/**
 * Who typed what into a shared terminal. Every input is an entry with its source — the agent
 * (`send_terminal_input`), the person at the dock, a launch link's script — the caller that
 * sent it, the time and the output offset it was typed at (so the dock can put a mark in the
 * scrollback). A person's keystrokes arrive one by one and are merged into one entry until
 * Enter. The journal also keeps resizes and who took or gave back control, and when output
 * arrived (for an asciicast). It lives in memory with the terminal; inputs are shown with
 * secret shapes redacted.
 */
import { redactSecrets, redactText } from '../../shared/redact.js';

/** Who typed: the agent's tool call, the person at the dock, a launch link's script. */
export type TerminalInputSource = 'agent' | 'person' | 'script';

/** The sender of an input: its source and caller (`mcp:<session>`, `dock:owner`, `launch:<id>`). */
export interface TerminalInputBy {
  source: TerminalInputSource;
  who: string;
}

/** One event of a terminal's journal. */
export interface JournalEntry {
  seq: number;
  /** Epoch milliseconds (of the first keystroke, for a merged entry). */
  at: number;
  kind: 'input' | 'resize' | 'hold' | 'release';
  source: TerminalInputSource | null;
  who: string;
  /** The output offset when it happened: where the dock's scrollback shows its mark. */
  offset: number;
  /** Input: what was typed (control keys as they are; secret shapes redacted when read). */
  text?: string;
  bytes?: number;
  /** Resize: the new size. */
  cols?: number;
  rows?: number;
}

/** Entries kept per terminal (oldest dropped first). */
export const MAX_JOURNAL_ENTRIES = 2000;
/** Characters of input kept per entry. */
const MAX_ENTRY_TEXT = 4096;
/** A person's keystrokes within this many milliseconds of the last join its entry (until Enter). */
const MERGE_MS = 3000;
/** Output times kept (the oldest are merged first). */
const MAX_OUTPUT_MARKS = 20_000;

export class TerminalJournal {
  private readonly entries: JournalEntry[] = [];
  private seq = 0;
  /** When output at each offset arrived: ascending offsets. */
  private readonly outputMarks: { offset: number; at: number }[] = [];

  constructor(
    /** The terminal's size when it started (the asciicast's header). */
    readonly initial: { cols: number; rows: number; at: number },
  ) {}

  /** Records an input; a person's keystroke joins the entry of their last ones until Enter. */
  input(by: TerminalInputBy, data: string, offset: number, now = Date.now()): void {
    const last = this.entries.at(-1);
    if (
      last?.kind === 'input' &&
      by.source === 'person' &&
      last.source === 'person' &&
      last.who === by.who &&
      now - last.at < MERGE_MS &&
      !/[\r\n]$/.test(last.text ?? '') &&
      (last.text?.length ?? 0) + data.length <= MAX_ENTRY_TEXT
    ) {
      last.text = `${last.text ?? ''}${data}`;
      last.bytes = (last.bytes ?? 0) + Buffer.byteLength(data);
      return;
    }
    this.push({
      at: now,
      kind: 'input',
      source: by.source,
      who: by.who,
      offset,
      text: data.slice(0, MAX_ENTRY_TEXT),
      bytes: Buffer.byteLength(data),
    });
  }

  resize(who: string, cols: number, rows: number, offset: number, now = Date.now()): void {
    this.push({ at: now, kind: 'resize', source: null, who, offset, cols, rows });
  }

  control(kind: 'hold' | 'release', who: string, offset: number, now = Date.now()): void {
    this.push({ at: now, kind, source: 'person', who, offset });
  }

  /** Notes that output starting at `offset` arrived now. */
  output(offset: number, now = Date.now()): void {
    const last = this.outputMarks.at(-1);
    if (last && now - last.at < 5) return; // the same burst
    this.outputMarks.push({ offset, at: now });
    if (this.outputMarks.length > MAX_OUTPUT_MARKS) {
      // coarser, not shorter: every other mark of the older half goes
      const half = MAX_OUTPUT_MARKS / 2;
      const older = this.outputMarks.splice(0, half).filter((_, i) => i % 2 === 0);
      this.outputMarks.unshift(...older);
    }
  }

  /** Drops output times before `offset` (retention moved past them), keeping one to start from. */
  forgetOutputBefore(offset: number): void {
    let drop = 0;
    while (drop + 1 < this.outputMarks.length && this.outputMarks[drop + 1]!.offset <= offset) drop++;
    if (drop > 0) this.outputMarks.splice(0, drop);
  }

  /** The entries, oldest first, inputs redacted; only those of `source` when given. */
  list(filter: { source?: TerminalInputSource; afterSeq?: number } = {}): JournalEntry[] {
    return this.entries
      .filter(
        (e) =>
          (filter.source === undefined || e.source === filter.source) &&
          (filter.afterSeq === undefined || e.seq > filter.afterSeq),
      )
      .map((e) => (e.text === undefined ? { ...e } : { ...e, text: redactText(e.text, redactSecrets) }));
  }

  /** Output arrival times, ascending offsets. */
  outputTimes(): readonly { offset: number; at: number }[] {
    return this.outputMarks;
  }

  private push(entry: Omit<JournalEntry, 'seq'>): void {
    this.entries.push({ seq: ++this.seq, ...entry });
    if (this.entries.length > MAX_JOURNAL_ENTRIES) this.entries.shift();
  }
}
