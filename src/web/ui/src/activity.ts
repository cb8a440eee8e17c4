/** The activity panel: tool calls, the timeline, jobs, logs and agents behind a segmented control. */
import { AgentsPanel } from './agents.js';
import { AuditList } from './audit.js';
import { h } from './dom.js';
import { FileBrowser } from './files.js';
import { JobList } from './jobs.js';
import { LogList } from './logs.js';
import type { DockSocket } from './socket.js';
import { TimelineList } from './timeline.js';

export type TabName = 'audit' | 'timeline' | 'jobs' | 'files' | 'logs' | 'agents';

const LABELS: Record<TabName, string> = {
  audit: 'Tool calls',
  timeline: 'Timeline',
  jobs: 'Jobs',
  files: 'Files',
  logs: 'Logs',
  agents: 'Agents',
};

export class ActivityPanel {
  readonly el: HTMLElement;
  readonly audit = new AuditList();
  readonly jobs = new JobList();
  readonly logs = new LogList();
  readonly files: FileBrowser;
  readonly agents: AgentsPanel;
  readonly timeline: TimelineList;
  private readonly counts: Record<TabName, HTMLElement> = {
    audit: h('span', { class: 'count', 'data-testid': 'audit-count' }, '0'),
    timeline: h('span', { class: 'count', 'data-testid': 'timeline-count', title: 'Checkpoints' }, '0'),
    jobs: h('span', { class: 'count' }, '0'),
    files: h('span', { class: 'count dot-only' }),
    logs: h('span', { class: 'count dot-only' }),
    agents: h('span', { class: 'count', 'data-testid': 'agents-count' }, '0'),
  };
  private readonly buttons = new Map<TabName, HTMLButtonElement>();
  private current: TabName = 'audit';

  constructor(socket: DockSocket, toast: (text: string, kind?: 'err' | 'ok') => void) {
    this.agents = new AgentsPanel(socket, toast);
    this.files = new FileBrowser(toast);
    this.timeline = new TimelineList(socket, toast);
    this.timeline.onCount = (n) => {
      this.counts.timeline.textContent = String(n);
    };
    const segmented = h('div', { class: 'segmented', role: 'tablist' });
    for (const name of ['audit', 'timeline', 'jobs', 'files', 'logs', 'agents'] as const) {
      const b = h(
        'button',
        { type: 'button', role: 'tab', 'data-tab': name },
        LABELS[name],
        this.counts[name],
      );
      b.addEventListener('click', () => this.select(name));
      this.buttons.set(name, b);
      segmented.append(b);
    }
    this.audit.onCount = (n) => {
      this.counts.audit.textContent = String(n);
    };
    this.jobs.onCount = (running, total) => {
      this.counts.jobs.textContent = running > 0 ? `${running} running` : String(total);
      this.counts.jobs.classList.toggle('live', running > 0);
    };
    this.agents.onCount = (running, total) => {
      this.counts.agents.textContent = running > 0 ? `${running} running` : String(total);
      this.counts.agents.classList.toggle('live', running > 0);
    };
    this.logs.onWarn = (level) => {
      if (this.current !== 'logs') this.counts.logs.className = `count dot-only ${level}`;
    };
    this.el = h(
      'section',
      { class: 'panel activity', 'aria-label': 'Activity' },
      h('div', { class: 'panel-head' }, h('span', { class: 'panel-title' }, 'Activity'), segmented),
      h(
        'div',
        { class: 'activity-body' },
        this.audit.el,
        this.timeline.el,
        this.jobs.el,
        this.files.el,
        this.logs.el,
        this.agents.el,
      ),
    );
    this.select('audit');
  }

  select(name: TabName): void {
    this.current = name;
    const panes: Record<TabName, HTMLElement> = {
      audit: this.audit.el,
      timeline: this.timeline.el,
      jobs: this.jobs.el,
      files: this.files.el,
      logs: this.logs.el,
      agents: this.agents.el,
    };
    for (const [n, b] of this.buttons) {
      b.classList.toggle('active', n === name);
      b.setAttribute('aria-selected', String(n === name));
      panes[n].hidden = n !== name;
    }
    if (name === 'logs') this.counts.logs.className = 'count dot-only';
    if (name === 'files') this.files.shown();
  }

  /** Shows the agents tab only when the server runs agents. */
  setAgentsAvailable(available: boolean): void {
    const button = this.buttons.get('agents');
    if (button) button.hidden = !available;
    if (!available && this.current === 'agents') this.select('audit');
  }
}
