/**
 * The audit stream: every tool call as it is recorded, newest first. Calls a job made through
 * the tool channel are nested under the call that started the job (their parent).
 */
import { POLL_TOOLS } from '../../dock/call-summary.js';
import type { DockAuditRow } from '../../dock/protocol.js';
import './activity.css';
import { clock, duration, h, prettyJson, shortCaller } from './dom.js';

const MAX_ROWS = 500;

interface Item {
  row: DockAuditRow;
  el: HTMLElement;
  children: HTMLElement;
}

export class AuditList {
  readonly el = h('div', { class: 'list audit', 'data-testid': 'audit-list' });
  private readonly empty = h(
    'div',
    { class: 'empty small' },
    h('div', { class: 'empty-title' }, 'No tool calls yet'),
    h(
      'div',
      { class: 'empty-text' },
      'Every call through Paddock (MCP clients, agents, scripts in the computer, this dock) shows up here as it happens.',
    ),
  );
  private readonly items = new Map<string, Item>();
  private readonly order: string[] = [];
  private readonly onlyWatched = h('input', { type: 'checkbox', 'data-testid': 'audit-only-watched' });
  private watched: string | null = null;
  private readonly filter: HTMLElement;
  /** Polls folded under a newer poll of the same tool and caller (hidden, counted there). */
  private readonly folded = new Set<string>();
  /** How many polls in a row each newest poll stands for. */
  private readonly foldCounts = new Map<string, number>();
  /** The newest top-level row when it is a poll: the next identical poll folds it. */
  private lastPoll: { id: string; tool: string; caller: string; count: number } | null = null;
  onCount: (n: number) => void = () => undefined;

  constructor() {
    const filter = h(
      'label',
      { class: 'audit-filter muted', title: 'Calls that acted on the computer shown in the dock' },
      this.onlyWatched,
      ' Only this computer',
    );
    this.filter = filter;
    this.el.append(filter, this.empty);
    this.onlyWatched.addEventListener('change', () => this.applyFilter());
  }

  /** The computer the dock shows; with the filter on, only its calls are listed. */
  setWatched(computer: string | null): void {
    // after a switch to another computer, its own calls are what the person came to see
    if (this.watched !== null && computer !== this.watched)
      (this.onlyWatched as HTMLInputElement).checked = true;
    this.watched = computer;
    this.applyFilter();
  }

  private applyFilter(): void {
    for (const item of this.items.values()) this.filterOne(item);
  }

  private filterOne(item: Item): void {
    if (item.el.parentElement !== this.el) return;
    item.el.hidden =
      this.folded.has(item.row.id) ||
      ((this.onlyWatched as HTMLInputElement).checked && item.row.computer !== this.watched);
  }

  reset(rows: DockAuditRow[]): void {
    this.items.clear();
    this.folded.clear();
    this.foldCounts.clear();
    this.lastPoll = null;
    this.order.length = 0;
    this.el.replaceChildren(this.filter, this.empty);
    for (const row of rows) this.add(row, false);
    this.update();
  }

  add(row: DockAuditRow, animate = true): void {
    const known = this.items.get(row.id);
    if (known) {
      // the same call again, now ended: the row takes its outcome, its nested calls stay
      const next = this.render(row);
      next.children.append(...known.children.childNodes);
      known.el.replaceWith(next.el);
      this.items.set(row.id, next);
      this.filterOne(next);
      return;
    }
    const item = this.render(row);
    if (animate) {
      item.el.classList.add('fresh');
      setTimeout(() => item.el.classList.remove('fresh'), 1700);
    }
    const parent = row.parentId ? this.items.get(row.parentId) : undefined;
    if (parent) parent.children.prepend(item.el);
    else {
      this.el.insertBefore(item.el, this.empty.nextSibling);
      this.foldPoll(item);
    }
    for (const other of this.items.values()) {
      if (other.row.parentId === row.id && other.el.parentElement === this.el)
        item.children.prepend(other.el);
    }
    this.items.set(row.id, item);
    this.filterOne(item);
    this.order.push(row.id);
    while (this.order.length > MAX_ROWS) {
      const old = this.order.shift();
      if (!old) break;
      this.items.get(old)?.el.remove();
      this.items.delete(old);
    }
    this.update();
  }

  /** A poll right after the same poll of the same caller folds the older one into it (×N). */
  private foldPoll(item: Item): void {
    const { row } = item;
    if (!POLL_TOOLS.has(row.tool)) {
      this.lastPoll = null;
      return;
    }
    const last = this.lastPoll;
    const same = last && last.tool === row.tool && last.caller === row.caller;
    const count = same ? last.count + 1 : 1;
    if (same) {
      this.folded.add(last.id);
      const older = this.items.get(last.id);
      if (older) this.filterOne(older);
    }
    this.lastPoll = { id: row.id, tool: row.tool, caller: row.caller, count };
    if (count > 1) {
      this.foldCounts.set(row.id, count);
      item.el.querySelector('.tool')?.after(foldChip(count));
    }
  }

  private update(): void {
    this.empty.hidden = this.items.size > 0;
    this.onCount(this.items.size);
  }

  private render(row: DockAuditRow): Item {
    const outcome =
      row.state === 'running'
        ? h('span', { class: 'outcome running', title: 'Still running' }, 'running')
        : row.success
          ? h('span', { class: 'outcome ok', title: 'Succeeded' }, 'ok')
          : h('span', { class: 'outcome err', title: row.errorMessage ?? '' }, row.errorCode ?? 'failed');
    const lineage =
      row.via === 'channel' && row.jobId
        ? h('span', { class: 'chip via' }, `via ${row.jobId}`)
        : row.via !== 'direct'
          ? h('span', { class: 'chip via' }, row.via)
          : null;
    const head = h(
      'button',
      { class: 'row-head', type: 'button', 'aria-expanded': 'false' },
      h('span', { class: 'time mono' }, clock(row.startedAt)),
      h('span', { class: 'tool mono', 'data-testid': 'audit-tool' }, row.tool),
      (this.foldCounts.get(row.id) ?? 0) > 1 ? foldChip(this.foldCounts.get(row.id) ?? 0) : null,
      lineage,
      row.summary
        ? h('span', { class: 'summary', title: row.summary, 'data-testid': 'audit-summary' }, row.summary)
        : null,
      h('span', { class: 'caller', title: row.caller }, row.callerLabel ?? shortCaller(row.caller)),
      h('span', { class: 'dur mono' }, duration(row.durationMs)),
      outcome,
    );
    const details = h(
      'div',
      { class: 'row-details', hidden: true },
      row.errorMessage ? h('p', { class: 'err' }, row.errorMessage) : null,
      h('pre', { class: 'mono' }, prettyJson(row.input)),
      h(
        'div',
        { class: 'ids mono' },
        `id ${row.id}`,
        row.parentId ? ` · parent ${row.parentId}` : '',
        row.jobId ? ` · job ${row.jobId}` : '',
        row.approvalId ? ` · approval ${row.approvalId}${row.approver ? ` by ${row.approver}` : ''}` : '',
        row.checkpointId ? ` · checkpoint ${row.checkpointId} before it` : '',
        ` · ${row.source}`,
      ),
    );
    head.addEventListener('click', () => {
      details.hidden = !details.hidden;
      head.setAttribute('aria-expanded', String(!details.hidden));
    });
    const children = h('div', { class: 'children' });
    const el = h(
      'div',
      {
        class: `audit-row${row.state === 'running' ? ' running' : row.success ? '' : ' failed'}`,
        'data-tool': row.tool,
        'data-id': row.id,
        'data-computer': row.computer ?? '',
      },
      head,
      details,
      children,
    );
    return { row, el, children };
  }
}

/** `×N`: this row stands for N polls in a row. */
function foldChip(count: number): HTMLElement {
  return h(
    'span',
    {
      class: 'chip folded',
      'data-testid': 'audit-folded',
      title: `${count} calls in a row; the older ones are folded`,
    },
    `×${count}`,
  );
}
