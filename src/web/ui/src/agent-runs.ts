/**
 * The runs of agents, newest first: status, turns, tokens and duration; opening a run asks the
 * server for its tool calls (`agent.show`) and nests the calls a job made under the
 * run_command that started it.
 */
import type { DockAgentCall, DockAgentRun } from '../../dock/protocol.js';
import { clock, duration, h, prettyJson, replace } from './dom.js';
import type { DockSocket } from './socket.js';

const MAX_RUNS = 100;
/** Wait before asking for a run's calls again while it is running. */
const REFRESH_MS = 300;

const STATUS_LABEL: Record<DockAgentRun['status'], string> = {
  running: 'running',
  succeeded: 'succeeded',
  failed: 'failed',
  limit: 'limit',
  cancelled: 'cancelled',
};

interface Item {
  run: DockAgentRun;
  el: HTMLElement;
  head: HTMLButtonElement;
  body: HTMLElement;
  refresh: ReturnType<typeof setTimeout> | null;
}

export class RunList {
  readonly el = h('div', { class: 'agent-runs', 'data-testid': 'agent-runs' });
  private readonly empty = h(
    'div',
    { class: 'empty-text muted small-text runs-empty' },
    'No runs yet. Runs started by a schedule, the CLI or Run now appear here.',
  );
  private readonly items = new Map<string, Item>();
  /** A run this page started, to open as soon as it is listed. */
  private openWhenListed: string | null = null;

  constructor(private readonly socket: DockSocket) {
    this.el.append(this.empty);
  }

  reset(runs: DockAgentRun[]): void {
    const open = new Set([...this.items.values()].filter((i) => !i.body.hidden).map((i) => i.run.id));
    for (const item of this.items.values()) if (item.refresh) clearTimeout(item.refresh);
    this.items.clear();
    this.el.replaceChildren(this.empty);
    for (const run of [...runs].reverse()) this.upsert(run);
    for (const id of open) {
      const item = this.items.get(id);
      if (item) this.expand(item, true);
    }
  }

  upsert(run: DockAgentRun): void {
    let item = this.items.get(run.id);
    if (!item) {
      item = this.create(run);
      this.items.set(run.id, item);
      this.el.insertBefore(item.el, this.empty.nextSibling);
      while (this.items.size > MAX_RUNS) {
        const oldest = this.items.keys().next().value;
        if (oldest === undefined) break;
        this.items.get(oldest)?.el.remove();
        this.items.delete(oldest);
      }
    }
    item.run = run;
    this.renderHead(item);
    if (!item.body.hidden) this.scheduleRefresh(item);
    if (this.openWhenListed === run.id) {
      this.openWhenListed = null;
      this.expand(item, true);
      item.el.scrollIntoView({ block: 'nearest' });
    }
    this.empty.hidden = this.items.size > 0;
  }

  /** Opens a run once it is listed (the page just started it). */
  open(runId: string): void {
    const item = this.items.get(runId);
    if (!item) {
      this.openWhenListed = runId;
      return;
    }
    this.expand(item, true);
    item.el.scrollIntoView({ block: 'nearest' });
  }

  /** The server's answer to `agent.show`. */
  details(run: DockAgentRun, calls: DockAgentCall[], truncated: boolean): void {
    const item = this.items.get(run.id);
    if (!item || item.body.hidden) return;
    item.run = run;
    this.renderHead(item);
    replace(item.body, ...this.renderDetails(run, calls, truncated));
  }

  private create(run: DockAgentRun): Item {
    const head = h('button', { class: 'row-head', type: 'button', 'aria-expanded': 'false' });
    const body = h('div', { class: 'row-details run-details', hidden: true });
    const el = h('div', { class: 'run-row', 'data-run': run.id }, head, body);
    const item: Item = { run, el, head, body, refresh: null };
    head.addEventListener('click', () => this.expand(item, body.hidden === true));
    return item;
  }

  private expand(item: Item, open: boolean): void {
    item.body.hidden = !open;
    item.head.setAttribute('aria-expanded', String(open));
    if (!open) return;
    if (!item.body.hasChildNodes()) replace(item.body, h('div', { class: 'muted small-text' }, 'Loading…'));
    void this.load(item);
  }

  private scheduleRefresh(item: Item): void {
    if (item.refresh) return;
    item.refresh = setTimeout(() => {
      item.refresh = null;
      if (!item.body.hidden) void this.load(item);
    }, REFRESH_MS);
  }

  private async load(item: Item): Promise<void> {
    const reply = await this.socket.request({ type: 'agent.show', runId: item.run.id });
    if (!reply.ok) replace(item.body, h('p', { class: 'err' }, reply.message));
  }

  private renderHead(item: Item): void {
    const { run } = item;
    item.el.className = `run-row ${run.status}`;
    const ended = run.endedAt ?? Date.now();
    replace(
      item.head,
      h(
        'span',
        { class: `state ${run.status}`, 'data-testid': 'run-status' },
        run.status === 'running' ? h('span', { class: 'spinner' }) : null,
        run.status === 'running' && run.waitingApproval ? 'waiting for approval' : STATUS_LABEL[run.status],
      ),
      h('span', { class: 'run-agent mono' }, run.agent),
      h('span', { class: 'chip' }, run.trigger),
      h('span', { class: 'run-meta mono', title: 'turns · tokens in/out' }, runMeta(run)),
      h('span', { class: 'time mono' }, clock(run.startedAt)),
      h('span', { class: 'dur mono' }, run.status === 'running' ? '…' : duration(ended - run.startedAt)),
    );
  }

  private renderDetails(run: DockAgentRun, calls: DockAgentCall[], truncated: boolean): Node[] {
    const out: Node[] = [];
    if (run.input) out.push(h('div', { class: 'label' }, 'Input'), h('pre', { class: 'mono' }, run.input));
    if (run.error)
      out.push(h('p', { class: 'err' }, run.errorCode ? `${run.errorCode}: ${run.error}` : run.error));
    if (run.finalAnswer)
      out.push(
        h('div', { class: 'label' }, 'Final answer'),
        h('pre', { class: 'answer', 'data-testid': 'run-answer' }, run.finalAnswer),
      );
    out.push(h('div', { class: 'label' }, `Tool calls (${calls.length}${truncated ? '+' : ''})`));
    out.push(
      calls.length > 0
        ? callTree(calls)
        : h('div', { class: 'muted small-text' }, run.status === 'running' ? 'None yet.' : 'None.'),
    );
    if (run.deliveries.length > 0) {
      out.push(
        h(
          'div',
          { class: 'ids mono' },
          run.deliveries
            .map((d) => `notify ${d.channel}: ${d.ok ? 'sent' : `failed (${d.error ?? 'unknown'})`}`)
            .join(' · '),
        ),
      );
    }
    out.push(h('div', { class: 'ids mono' }, `run ${run.id} · ${run.provider} / ${run.model}`));
    return out;
  }
}

function runMeta(run: DockAgentRun): string {
  const tokens = run.inputTokens + run.outputTokens;
  return `${run.turns} turn${run.turns === 1 ? '' : 's'} · ${tokens.toLocaleString('en')} tok`;
}

/** The run's calls as a tree: a call's children are the calls whose parent it is. */
function callTree(calls: DockAgentCall[]): HTMLElement {
  const root = h('div', { class: 'call-tree', 'data-testid': 'run-calls' });
  const children = new Map<string, HTMLElement>();
  const sorted = [...calls].sort((a, b) => a.depth - b.depth || a.startedAt - b.startedAt || a.seq - b.seq);
  for (const call of sorted) {
    const { el, kids } = callRow(call);
    children.set(call.id, kids);
    (call.parentId ? (children.get(call.parentId) ?? root) : root).append(el);
  }
  return root;
}

function callRow(call: DockAgentCall): { el: HTMLElement; kids: HTMLElement } {
  const outcome = call.success
    ? h('span', { class: 'outcome ok' }, 'ok')
    : h('span', { class: 'outcome err', title: call.errorMessage ?? '' }, call.errorCode ?? 'failed');
  const head = h(
    'button',
    { class: 'row-head', type: 'button', 'aria-expanded': 'false' },
    h('span', { class: 'time mono' }, clock(call.startedAt)),
    h('span', { class: 'tool mono', 'data-testid': 'call-tool' }, call.tool),
    call.via === 'channel' && call.jobId ? h('span', { class: 'chip via' }, `via ${call.jobId}`) : null,
    h('span', { class: 'caller', title: call.caller }, call.source),
    h('span', { class: 'dur mono' }, duration(call.durationMs)),
    outcome,
  );
  const details = h(
    'div',
    { class: 'row-details', hidden: true },
    call.errorMessage ? h('p', { class: 'err' }, call.errorMessage) : null,
    h('pre', { class: 'mono' }, prettyJson(call.input)),
    h('div', { class: 'ids mono' }, `id ${call.id} · ${call.caller}`),
  );
  head.addEventListener('click', () => {
    details.hidden = !details.hidden;
    head.setAttribute('aria-expanded', String(!details.hidden));
  });
  const kids = h('div', { class: 'children' });
  const el = h(
    'div',
    { class: `audit-row${call.success ? '' : ' failed'}`, 'data-tool': call.tool, 'data-id': call.id },
    head,
    details,
    kids,
  );
  return { el, kids };
}
