/** The jobs list: running and finished command jobs of the current computer, with output. */
import type { DockJob } from '../../dock/protocol.js';
import { duration, h, replace } from './dom.js';

const MAX_JOBS = 100;

const STATE_LABEL: Record<DockJob['state'], string> = {
  running: 'running',
  exited: 'exit 0',
  failed: 'failed',
  killed: 'killed',
  timed_out: 'timed out',
  canceled: 'canceled',
};

interface Item {
  job: DockJob;
  el: HTMLElement;
  head: HTMLButtonElement;
  /** Cancel and the ports of a running job (outside the head: a button holds no buttons). */
  actions: HTMLElement;
  body: HTMLElement;
}

/** What the person can do with a job from the list. */
export interface JobActions {
  /** Cancels the job (cancel_job through the gateway); resolves with an error text or null. */
  cancel(jobId: string): Promise<string | null>;
  /** Shows the server on `port` in the preview. */
  preview(port: number): void;
}

export class JobList {
  readonly el = h('div', { class: 'list jobs', 'data-testid': 'job-list' });
  private readonly empty = h(
    'div',
    { class: 'empty small' },
    h('div', { class: 'empty-title' }, 'No jobs in this computer'),
    h(
      'div',
      { class: 'empty-text' },
      'Commands started with run_command (and launch-link scripts) are listed here with their output.',
    ),
  );
  private readonly items = new Map<string, Item>();
  private generation: number | null = null;
  onCount: (running: number, total: number) => void = () => undefined;
  /** Set by the page: cancel and preview. */
  actions: JobActions | null = null;

  constructor() {
    this.el.append(this.empty);
  }

  reset(jobs: DockJob[], generation: number | null): void {
    this.items.clear();
    this.el.replaceChildren(this.empty);
    this.generation = generation;
    for (const job of jobs) this.upsert(job);
    this.update();
  }

  /** A new generation drops the old one's jobs (their processes are gone). */
  setGeneration(generation: number | null): void {
    if (generation === this.generation) return;
    this.reset([], generation);
  }

  upsert(job: DockJob): void {
    if (this.generation !== null && job.generation !== this.generation) {
      if (job.generation < this.generation) return;
      this.reset([], job.generation);
    }
    let item = this.items.get(job.jobId);
    if (!item) {
      item = this.create(job);
      this.items.set(job.jobId, item);
      this.el.insertBefore(item.el, this.empty.nextSibling);
      if (job.state === 'running') this.expand(item, true);
      while (this.items.size > MAX_JOBS) {
        const oldest = this.items.keys().next().value;
        if (oldest === undefined) break;
        this.items.get(oldest)?.el.remove();
        this.items.delete(oldest);
      }
    }
    item.job = job;
    this.render(item);
    this.update();
  }

  /** Opens a job's output (e.g. the startup script of a confirmed launch link). */
  focus(jobId: string): boolean {
    const item = this.items.get(jobId);
    if (!item) return false;
    this.expand(item, true);
    item.el.scrollIntoView({ block: 'nearest' });
    return true;
  }

  private create(job: DockJob): Item {
    const head = h('button', { class: 'row-head', type: 'button', 'aria-expanded': 'false' });
    const body = h('div', { class: 'row-details', hidden: true });
    const actions = h('div', { class: 'job-actions' });
    const el = h('div', { class: 'job-row', 'data-job': job.jobId }, head, actions, body);
    const item: Item = { job, el, head, actions, body };
    head.addEventListener('click', () => this.expand(item, body.hidden === true));
    return item;
  }

  private expand(item: Item, open: boolean): void {
    item.body.hidden = !open;
    item.head.setAttribute('aria-expanded', String(open));
    if (open) this.render(item);
  }

  private render(item: Item): void {
    const { job } = item;
    item.el.className = `job-row ${job.state}`;
    replace(
      item.head,
      h(
        'span',
        { class: `state ${job.state}` },
        job.state === 'running' ? h('span', { class: 'spinner' }) : null,
        STATE_LABEL[job.state] === 'failed' && job.exitCode !== null
          ? `exit ${job.exitCode}`
          : STATE_LABEL[job.state],
      ),
      h('span', { class: 'mono id' }, job.jobId),
      job.background
        ? h('span', { class: 'chip service', title: 'A service: no timeout ends it' }, 'service')
        : null,
      h('span', { class: 'cmd mono', title: job.command }, job.command || '(script)'),
      h('span', { class: 'dur mono' }, duration(job.durationMs)),
    );
    this.renderActions(item);
    if (item.body.hidden) return;
    const pre = (text: string, cls: string) => {
      const el = h('pre', { class: `out mono ${cls}` }, text);
      queueMicrotask(() => {
        el.scrollTop = el.scrollHeight;
      });
      return el;
    };
    const hasOutput = job.stdoutTail.length + job.stderrTail.length > 0;
    replace(
      item.body,
      job.stdoutTail ? pre(job.stdoutTail, 'stdout') : null,
      job.stderrTail ? h('div', { class: 'label' }, 'stderr') : null,
      job.stderrTail ? pre(job.stderrTail, 'stderr') : null,
      hasOutput
        ? null
        : h('div', { class: 'muted small-text' }, job.state === 'running' ? 'No output yet.' : 'No output.'),
      job.signal ? h('div', { class: 'muted small-text' }, `Ended by ${job.signal}.`) : null,
    );
  }

  /** Cancel for a running job, and a preview button per port its processes listen on. */
  private renderActions(item: Item): void {
    const { job } = item;
    const ports = job.ports ?? [];
    const running = job.state === 'running';
    item.actions.hidden = !running && ports.length === 0;
    if (item.actions.hidden) return;
    const portButtons = ports.map((port) => {
      const b = h(
        'button',
        { type: 'button', class: 'chip port-chip', 'data-port': port, title: `Preview port ${port}` },
        `:${port} preview`,
      );
      b.addEventListener('click', () => this.actions?.preview(port));
      return b;
    });
    const cancel = running
      ? h(
          'button',
          {
            type: 'button',
            class: 'ghost danger small',
            'data-testid': 'job-cancel',
            title: 'cancel_job: ends it and every process it started',
          },
          'Cancel',
        )
      : null;
    cancel?.addEventListener('click', async () => {
      if (!this.actions || !cancel) return;
      cancel.disabled = true;
      cancel.textContent = 'Cancelling…';
      const failed = await this.actions.cancel(job.jobId);
      if (failed) {
        cancel.disabled = false;
        cancel.textContent = 'Cancel';
      }
    });
    replace(item.actions, ...portButtons, cancel);
  }

  private update(): void {
    this.empty.hidden = this.items.size > 0;
    let running = 0;
    for (const i of this.items.values()) if (i.job.state === 'running') running++;
    this.onCount(running, this.items.size);
  }
}
