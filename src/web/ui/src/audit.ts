/**
 * The audit stream: every tool call as it is recorded, newest first. Calls a job made through
 * the tool channel are nested under the call that started the job (their parent).
 */
import type { DockAuditRow } from '../../dock/protocol.js';
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
    this.watched = computer;
    this.applyFilter();
  }

  private applyFilter(): void {
    for (const item of this.items.values()) this.filterOne(item);
  }

  private filterOne(item: Item): void {
    if (item.el.parentElement !== this.el) return;
    item.el.hidden = (this.onlyWatched as HTMLInputElement).checked && item.row.computer !== this.watched;
  }

  reset(rows: DockAuditRow[]): void {
    this.items.clear();
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
    else this.el.insertBefore(item.el, this.empty.nextSibling);
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
      lineage,
      h('span', { class: 'caller', title: row.caller }, shortCaller(row.caller)),
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
