/**
 * Who typed what in a shared terminal, at the dock: a mark in the scrollback at each input
 * (coloured by source: the agent, the person, a script), a list of inputs with a filter by
 * source, taking and giving back control (the agent's input is refused meanwhile), and the
 * session as an asciicast download.
 */
import type { IMarker, Terminal } from '@xterm/xterm';
import type { DockJournalEntry, DockTerminal } from '../../dock/protocol.js';
import './trust.css';
import { clock, h, replace } from './dom.js';
import type { DockSocket } from './socket.js';

type Source = 'agent' | 'person' | 'script';

/** The output offset a terminal cursor names (`t.` + base64url of `<id>:<offset>`). */
export function cursorOffset(cursor: string): number | null {
  if (!cursor.startsWith('t.')) return null;
  try {
    const text = atob(cursor.slice(2).replace(/-/g, '+').replace(/_/g, '/'));
    const n = Number(text.slice(text.lastIndexOf(':') + 1));
    return Number.isFinite(n) ? n : null;
  } catch {
    return null;
  }
}

interface Marks {
  /** Where each chunk of output ended, and the line it ended on. */
  boundaries: { offset: number; marker: IMarker }[];
  /** Journal entries already marked. */
  marked: Set<number>;
}

export class TerminalTrust {
  /** Controls for the panel head. */
  readonly bar = h('div', { class: 'terminal-trust', hidden: true });
  /** The list of inputs under the terminal. */
  readonly journalEl = h('div', {
    class: 'terminal-journal',
    hidden: true,
    'data-testid': 'terminal-journal',
  });
  private readonly holdButton = h(
    'button',
    { type: 'button', 'data-testid': 'terminal-hold' },
    'Take control',
  );
  private readonly heldNote = h('span', { class: 'held', 'data-testid': 'terminal-held' });
  private readonly filter = h(
    'select',
    { 'aria-label': 'Show inputs of', 'data-testid': 'journal-filter' },
    h('option', { value: '' }, 'all inputs'),
    h('option', { value: 'agent' }, 'the agent'),
    h('option', { value: 'person' }, 'people'),
    h('option', { value: 'script' }, 'scripts'),
  );
  private readonly whoTyped = h('button', { type: 'button', 'data-testid': 'journal-toggle' }, 'Who typed');
  private readonly cast = h('a', { download: '', 'data-testid': 'terminal-cast' }, 'Export .cast');
  private info: DockTerminal | null = null;
  private term: Terminal | null = null;
  private readonly marks = new Map<string, Marks>();
  private timer: number | undefined;

  constructor(
    private readonly socket: DockSocket,
    private readonly toast: (text: string, kind?: 'err' | 'ok') => void,
  ) {
    this.bar.append(this.heldNote, this.holdButton, this.whoTyped, this.filter, this.cast);
    this.holdButton.addEventListener('click', async () => {
      if (!this.info) return;
      const reply = await this.socket.request({
        type: 'terminal.hold',
        terminalId: this.info.id,
        hold: !this.info.heldBy,
      });
      this.toast(reply.message, reply.ok ? 'ok' : 'err');
    });
    this.whoTyped.addEventListener('click', () => {
      this.journalEl.hidden = !this.journalEl.hidden;
      this.refresh(0);
    });
    this.filter.addEventListener('change', () => this.refresh(0));
  }

  /** The terminal shown now (or none). */
  show(info: DockTerminal | null, term: Terminal | null): void {
    const changed = info?.id !== this.info?.id;
    this.info = info;
    this.term = term;
    this.bar.hidden = info === null;
    if (!info) return;
    const held = info.heldBy ?? null;
    this.heldNote.textContent = held ? `held by ${held}: the agent waits` : '';
    this.holdButton.textContent = held ? 'Give control back' : 'Take control';
    this.cast.setAttribute('href', `/dock/terminals/${info.id}.cast`);
    if (changed) {
      replace(this.journalEl);
      this.refresh(0);
    }
  }

  /** A fresh replay of a terminal begins: its old marks go with the old lines. */
  reset(terminalId: string): void {
    this.marks.delete(terminalId);
  }

  /** Output reached the terminal up to `cursor`: notes the line it ends on, and asks for new inputs. */
  output(terminalId: string, term: Terminal, cursor: string): void {
    const offset = cursorOffset(cursor);
    if (offset === null) return;
    const marks = this.marksOf(terminalId);
    marks.boundaries.push({ offset, marker: term.registerMarker(0) });
    if (marks.boundaries.length > 5000) {
      for (const b of marks.boundaries.splice(0, 1000)) b.marker.dispose();
    }
    if (terminalId === this.info?.id) this.refresh(800);
  }

  /** The journal of a terminal arrived: the list and the marks. */
  journal(terminalId: string, entries: DockJournalEntry[]): void {
    if (terminalId !== this.info?.id) return;
    const inputs = entries.filter((e) => e.kind === 'input');
    replace(
      this.journalEl,
      ...(entries.length === 0 ? [h('div', { class: 'entry' }, 'Nobody has typed here yet.')] : []),
      ...entries.map((e) =>
        h(
          'div',
          { class: `entry src-${e.source ?? 'none'}`, 'data-source': e.source ?? '' },
          h('span', {}, clock(e.at)),
          h('span', {}, e.kind === 'input' ? `${e.who} typed` : `${e.who} ${describe(e)}`),
          e.text !== undefined ? h('code', {}, visible(e.text)) : null,
        ),
      ),
    );
    this.journalEl.scrollTop = this.journalEl.scrollHeight;
    const term = this.term;
    if (!term) return;
    const marks = this.marksOf(terminalId);
    for (const e of inputs) {
      if (marks.marked.has(e.seq)) continue;
      // the line the output had reached when the input came; when one chunk of output spans that
      // moment (a page that attached late gets the replay at once), the line that chunk ended on
      const at =
        [...marks.boundaries].reverse().find((b) => b.offset <= e.offset) ??
        marks.boundaries.find((b) => b.offset > e.offset);
      if (!at || at.marker.isDisposed) continue;
      marks.marked.add(e.seq);
      const decoration = term.registerDecoration({ marker: at.marker, width: 1, x: 0 });
      decoration?.onRender((el) => {
        el.classList.add('input-mark', `src-${e.source ?? 'none'}`);
        el.title = `${e.who} typed: ${visible(e.text ?? '')}`;
        el.dataset.source = e.source ?? '';
      });
    }
  }

  private marksOf(terminalId: string): Marks {
    let marks = this.marks.get(terminalId);
    if (!marks) {
      marks = { boundaries: [], marked: new Set() };
      this.marks.set(terminalId, marks);
    }
    return marks;
  }

  /** Asks for the shown terminal's journal after `delayMs` (coalescing bursts of output). */
  private refresh(delayMs: number): void {
    window.clearTimeout(this.timer);
    this.timer = window.setTimeout(() => {
      const info = this.info;
      if (!info) return;
      const source = this.filter.value as Source | '';
      this.socket.send({ type: 'terminal.journal', terminalId: info.id, ...(source ? { source } : {}) });
    }, delayMs);
  }
}

function describe(e: DockJournalEntry): string {
  if (e.kind === 'resize') return `resized to ${e.cols}×${e.rows}`;
  return e.kind === 'hold' ? 'took control' : 'gave control back';
}

/** Control characters as visible text: Enter as ⏎, others as ^X. */
function visible(text: string): string {
  return text.replace(/[\x00-\x1f\x7f]/g, (c) =>
    c === '\r' || c === '\n' ? '⏎' : c === '\x7f' ? '⌫' : `^${String.fromCharCode(c.charCodeAt(0) + 64)}`,
  );
}
