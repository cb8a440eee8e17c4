/** The computer's system log (boot, launch, jobs, denials, errors), oldest at the top. */
import type { DockLogEntry } from '../../dock/protocol.js';
import { h, sinceBoot } from './dom.js';

const MAX_ENTRIES = 1000;

export class LogList {
  readonly el = h('div', { class: 'list logs mono', 'data-testid': 'log-list' });
  private readonly empty = h(
    'div',
    { class: 'empty small' },
    h('div', { class: 'empty-title' }, 'No log entries'),
    h(
      'div',
      { class: 'empty-text' },
      'Boot, launches, job starts and exits, and errors of the computer are logged here.',
    ),
  );
  private lastSeq = 0;
  private count = 0;
  onWarn: (level: DockLogEntry['level']) => void = () => undefined;

  constructor() {
    this.el.append(this.empty);
  }

  reset(entries: DockLogEntry[]): void {
    this.el.replaceChildren(this.empty);
    this.lastSeq = 0;
    this.count = 0;
    for (const e of entries) this.add(e, false);
  }

  add(entry: DockLogEntry, live = true): void {
    if (entry.seq <= this.lastSeq) return;
    this.lastSeq = entry.seq;
    const stick = this.el.scrollHeight - this.el.scrollTop - this.el.clientHeight < 24;
    this.el.append(
      h(
        'div',
        { class: `log-line ${entry.level}` },
        h('span', { class: 'ts' }, sinceBoot(entry.sinceBootMs)),
        h('span', { class: `lvl ${entry.level}` }, entry.level),
        h('span', { class: 'ev' }, entry.event),
        h('span', { class: 'msg' }, entry.message),
      ),
    );
    this.count++;
    while (this.count > MAX_ENTRIES && this.empty.nextSibling) {
      this.empty.nextSibling.remove();
      this.count--;
    }
    this.empty.hidden = this.count > 0;
    if (stick || !live) this.el.scrollTop = this.el.scrollHeight;
    if (live && (entry.level === 'err' || entry.level === 'warn')) this.onWarn(entry.level);
  }
}
