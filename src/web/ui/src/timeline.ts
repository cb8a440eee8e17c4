/**
 * The watched computer's timeline: its checkpoints between its tool calls, newest first. Each
 * checkpoint can be restored (after a confirmation: the computer's processes stop) or forked into
 * a new computer; each call that changed something can be undone, which restores the checkpoint
 * taken just before it.
 */

import { sizeText } from '../../../shared/bytes-text.js';
import type { DockAuditRow, DockCheckpoint, DockCheckpointsState } from '../../dock/protocol.js';
import { checkpointBefore, type TimelineEntry, timelineOf, undoable } from '../../dock/timeline.js';
import { CheckpointConfirm, checkpointTitle } from './checkpoint-confirm.js';
import { clock, h, replace, shortCaller } from './dom.js';
import type { DockSocket } from './socket.js';
import './timeline.css';

const MAX_ROWS = 500;

export class TimelineList {
  readonly el = h('div', { class: 'list timeline', 'data-testid': 'timeline' });
  private readonly confirm = new CheckpointConfirm();
  private readonly entries = h('div', { class: 'timeline-entries' });
  private readonly rows = new Map<string, DockAuditRow>();
  private state: DockCheckpointsState | null = null;
  private watched: string | null = null;
  onCount: (n: number) => void = () => undefined;

  constructor(
    private readonly socket: DockSocket,
    private readonly toast: (text: string, kind?: 'err' | 'ok') => void,
  ) {
    this.el.append(this.confirm.el, this.entries);
    this.render();
  }

  /** The audit rows of a snapshot. */
  resetRows(rows: DockAuditRow[]): void {
    this.rows.clear();
    for (const row of rows) this.rows.set(row.id, row);
    this.render();
  }

  /** A call started or ended. */
  addRow(row: DockAuditRow): void {
    this.rows.delete(row.id);
    this.rows.set(row.id, row);
    while (this.rows.size > MAX_ROWS) {
      const oldest = this.rows.keys().next().value;
      if (oldest === undefined) break;
      this.rows.delete(oldest);
    }
    if (row.computer === this.watched) this.render();
  }

  /** The watched computer's checkpoints (null: not known yet). */
  setCheckpoints(state: DockCheckpointsState | null): void {
    this.state = state;
    this.render();
  }

  /** The computer the dock shows. */
  setWatched(computer: string | null): void {
    if (computer === this.watched) return;
    this.watched = computer;
    this.render();
  }

  private get checkpoints(): DockCheckpoint[] {
    return this.state && this.state.computer === this.watched ? this.state.checkpoints : [];
  }

  private render(): void {
    const computer = this.watched;
    const checkpoints = this.checkpoints;
    this.onCount(checkpoints.length);
    if (!computer) {
      replace(this.entries, empty('No computer yet', 'Launch one; its checkpoints and calls show here.'));
      return;
    }
    const entries = timelineOf(computer, this.rows.values(), checkpoints);
    if (entries.length === 0) {
      replace(
        this.entries,
        empty(
          'Nothing on the timeline yet',
          'Checkpoints of this computer (checkpoint_computer, before approved calls, before a restore) show here between its tool calls.',
        ),
      );
      return;
    }
    replace(this.entries, ...entries.map((e) => this.renderEntry(computer, e, checkpoints)));
  }

  private renderEntry(computer: string, e: TimelineEntry, checkpoints: DockCheckpoint[]): HTMLElement {
    if (e.kind === 'checkpoint') return this.renderCheckpoint(computer, e.checkpoint);
    const row = e.row;
    const target = undoable(row) ? checkpointBefore(row, checkpoints) : null;
    const undo = target
      ? h(
          'button',
          {
            type: 'button',
            class: 'ghost small',
            'data-testid': 'call-undo',
            title: `Restore checkpoint ${target.id} (${checkpointTitle(target)})`,
          },
          'Back to before this call',
        )
      : null;
    undo?.addEventListener('click', () => void this.restore(computer, target as DockCheckpoint, row));
    const outcome =
      row.state === 'running'
        ? h('span', { class: 'outcome running' }, 'running')
        : row.success
          ? h('span', { class: 'outcome ok' }, 'ok')
          : h('span', { class: 'outcome err', title: row.errorMessage ?? '' }, row.errorCode ?? 'failed');
    return h(
      'div',
      { class: 'tl-call', 'data-testid': 'timeline-call', 'data-id': row.id, 'data-tool': row.tool },
      h('span', { class: 'time mono' }, clock(row.startedAt)),
      h('span', { class: 'tool mono' }, row.tool),
      row.summary ? h('span', { class: 'summary', title: row.summary }, row.summary) : null,
      h('span', { class: 'caller', title: row.caller }, row.callerLabel ?? shortCaller(row.caller)),
      outcome,
      undo,
    );
  }

  private renderCheckpoint(computer: string, c: DockCheckpoint): HTMLElement {
    const restore = h(
      'button',
      { type: 'button', class: 'ghost small', 'data-testid': 'checkpoint-restore' },
      'Restore',
    );
    restore.addEventListener('click', () => void this.restore(computer, c));
    const fork = h(
      'button',
      { type: 'button', class: 'ghost small', 'data-testid': 'checkpoint-fork' },
      'Fork',
    );
    fork.addEventListener('click', () => void this.fork(computer, c));
    return h(
      'div',
      {
        class: 'tl-checkpoint',
        'data-testid': 'timeline-checkpoint',
        'data-id': c.id,
        'data-trigger': c.trigger,
      },
      h('span', { class: 'time mono' }, clock(c.createdAt)),
      h('span', { class: 'marker', 'aria-hidden': 'true' }, '◆'),
      h('span', { class: 'title', title: c.id, 'data-testid': 'checkpoint-title' }, checkpointTitle(c)),
      h('span', { class: 'chip' }, c.trigger),
      h(
        'span',
        { class: 'size muted', title: `${c.files} files, ${sizeText(c.bytes)} in all` },
        `+${sizeText(c.addedBytes)}`,
      ),
      restore,
      fork,
    );
  }

  private async restore(computer: string, c: DockCheckpoint, row?: DockAuditRow): Promise<void> {
    const why = row ? `to undo ${row.tool} of ${clock(row.startedAt)}` : undefined;
    const answer = await this.confirm.restore(computer, c, why && `This takes it back ${why}`);
    if (!answer) return;
    const reply = await this.socket.request({ type: 'checkpoint.restore', computer, checkpointId: c.id });
    this.toast(reply.message, reply.ok ? 'ok' : 'err');
  }

  private async fork(computer: string, c: DockCheckpoint): Promise<void> {
    const answer = await this.confirm.fork(c);
    if (!answer || !('fork' in answer)) return;
    const reply = await this.socket.request({
      type: 'checkpoint.fork',
      computer,
      checkpointId: c.id,
      name: answer.fork,
    });
    this.toast(reply.message, reply.ok ? 'ok' : 'err');
  }
}

function empty(title: string, text: string): HTMLElement {
  return h(
    'div',
    { class: 'empty small' },
    h('div', { class: 'empty-title' }, title),
    h('div', { class: 'empty-text' }, text),
  );
}
