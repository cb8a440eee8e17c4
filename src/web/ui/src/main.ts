/**
 * The dock page: status and launch on top, terminals and preview on the left, the activity
 * of the computer (tool calls, jobs, logs) on the right. Everything is driven by /dock/ws.
 */
import './styles.css';
import type { DockLaunchProgress, DockSnapshot, ServerMessage } from '../../dock/protocol.js';
import { ActivityPanel } from './activity.js';
import { ApprovalsPanel } from './approvals.js';
import { BrowserVmHost } from './browser-vm.js';
import { h } from './dom.js';
import { PreviewPanel } from './preview.js';
import { DockSocket } from './socket.js';
import { StatusBar } from './status-bar.js';
import { TerminalPanel } from './terminals.js';
import { ToolReviewPanel } from './tool-review.js';
import { WebMcpTools } from './webmcp.js';

/** Short messages in the corner; the same text is not repeated within three seconds. */
class Toasts {
  readonly el = h('div', { class: 'toasts', 'aria-live': 'polite' });
  private readonly recent = new Map<string, number>();

  show(text: string, kind: 'err' | 'ok' = 'ok'): void {
    const now = Date.now();
    if ((this.recent.get(text) ?? 0) > now - 3000) return;
    for (const [t, at] of this.recent) if (at < now - 3000) this.recent.delete(t);
    this.recent.set(text, now);
    const el = h('div', { class: `toast ${kind}`, role: kind === 'err' ? 'alert' : 'status' }, text);
    this.el.append(el);
    setTimeout(() => el.remove(), kind === 'err' ? 8000 : 4000);
  }
}

class DockPage {
  private readonly toasts = new Toasts();
  private readonly socket: DockSocket;
  private readonly statusBar: StatusBar;
  private readonly terminals: TerminalPanel;
  private readonly preview: PreviewPanel;
  private readonly activity: ActivityPanel;
  private readonly approvals: ApprovalsPanel;
  private readonly toolReview: ToolReviewPanel;
  private revealedApproval = false;
  private readonly webmcp: WebMcpTools;
  private readonly vmHost: BrowserVmHost;
  private readonly signedOut = h(
    'div',
    { class: 'overlay', hidden: true, 'data-testid': 'signed-out' },
    h(
      'div',
      { class: 'overlay-card' },
      h('h2', {}, 'Signed out'),
      h(
        'p',
        {},
        'This browser has no session on the server (it may have restarted). Open the login link that paddock serve printed at its start.',
      ),
    ),
  );
  /** The launch link this page was opened for (`/?launch=<id>` after a confirmation). */
  private readonly launchOfPage: string | null;
  /** The computer this page was opened on (`/?computer=<name>`, the URL launch_computer answers). */
  private computerOfPage: string | null;
  private launch: DockLaunchProgress | null = null;
  private focusedLaunchJob = false;

  constructor(root: HTMLElement) {
    const query = new URLSearchParams(location.search);
    this.launchOfPage = query.get('launch');
    this.computerOfPage = query.get('computer');
    if (this.launchOfPage || this.computerOfPage) history.replaceState(null, '', '/');
    const toast = (text: string, kind?: 'err' | 'ok') => this.toasts.show(text, kind);
    this.socket = new DockSocket({
      message: (msg) => this.onMessage(msg),
      connection: (state) => {
        if (state !== 'live') {
          this.webmcp.disconnected();
          this.vmHost.disconnected();
          this.terminals.disconnected();
        }
        this.statusBar.setConnection(state);
        this.signedOut.hidden = state !== 'signed-out';
      },
      error: (reply) => toast(reply.message, 'err'),
    });
    this.statusBar = new StatusBar(this.socket, toast);
    this.terminals = new TerminalPanel(this.socket, toast);
    this.toolReview = new ToolReviewPanel(this.socket, toast);
    this.preview = new PreviewPanel(this.socket, toast);
    this.activity = new ActivityPanel(this.socket, toast);
    this.approvals = new ApprovalsPanel(this.socket, toast);
    this.activity.jobs.actions = {
      cancel: async (jobId) => {
        const reply = await this.socket.request({ type: 'job.cancel', jobId });
        toast(reply.message, reply.ok ? 'ok' : 'err');
        return reply.ok ? null : reply.message;
      },
      preview: (port) => void this.socket.request({ type: 'preview.navigate', path: '/', port }),
    };
    this.webmcp = new WebMcpTools(this.socket);
    this.vmHost = new BrowserVmHost(this.socket);
    this.vmHost.onHosting = (generations) => this.statusBar.setHosted(generations);
    root.append(
      this.statusBar.el,
      ...this.statusBar.banners,
      this.toolReview.notice,
      this.approvals.badge,
      this.approvals.el,
      this.toolReview.el,
      h(
        'main',
        { class: 'layout' },
        h('div', { class: 'left' }, this.terminals.el, this.preview.el),
        this.activity.el,
      ),
      this.toasts.el,
      this.signedOut,
    );
  }

  start(): void {
    this.socket.connect();
  }

  private applySnapshot(s: DockSnapshot): void {
    this.setTitle(s.status.profileName);
    this.statusBar.setProfiles(s.profiles);
    this.statusBar.setStatus(s.status);
    this.terminals.setFeatures(s.features);
    this.terminals.setLifecycle(s.status.lifecycle);
    this.preview.setFeatures(s.features);
    this.preview.set(s.preview);
    if (s.features.preview) this.preview.ports.ask();
    this.activity.audit.reset(s.audit);
    this.activity.timeline.resetRows(s.audit);
    this.activity.timeline.setWatched(s.watching);
    this.activity.timeline.setCheckpoints(s.checkpoints);
    this.activity.jobs.reset(s.jobs, s.status.generation);
    this.activity.logs.reset(s.logs);
    this.activity.setAgentsAvailable(s.agents !== null);
    if (s.agents) this.activity.agents.reset(s.agents);
    this.terminals.setList(s.terminals);
    this.terminals.reattach();
    this.onLaunch(s.launch);
    this.approvals.set(s.approvals);
    if (!this.revealedApproval) {
      this.revealedApproval = true;
      this.approvals.reveal();
    }
    this.statusBar.setComputers(s.computers, s.watching);
    this.activity.audit.setWatched(s.watching);
    // opened from the URL launch_computer answered: show that computer
    const asked = this.computerOfPage;
    this.computerOfPage = null;
    if (asked && asked !== s.watching && s.computers.some((c) => c.name === asked))
      this.socket.send({ type: 'computer.watch', name: asked });
    if (s.features.computer) {
      this.webmcp.refresh();
      this.vmHost.offer();
    }
  }

  /** Shows the progress of this page's launch link and opens its startup job once known. */
  private onLaunch(launch: DockLaunchProgress | null): void {
    this.launch = launch;
    this.statusBar.setLaunch(launch, this.launchOfPage);
    if (!launch || launch.linkId !== this.launchOfPage || this.focusedLaunchJob) return;
    if (launch.terminalId) {
      this.terminals.reveal(launch.terminalId);
      this.focusedLaunchJob = true;
    } else if (launch.jobId) {
      this.activity.select('jobs');
      this.focusedLaunchJob = this.activity.jobs.focus(launch.jobId);
    }
  }

  private setTitle(profileName: string | null): void {
    const waiting = /^\(\d+\) /.exec(document.title)?.[0] ?? '';
    document.title = `${waiting}${profileName ? `${profileName} · Paddock dock` : 'Paddock dock'}`;
  }

  private onMessage(msg: ServerMessage): void {
    switch (msg.type) {
      case 'snapshot':
        this.applySnapshot(msg);
        return;
      case 'status':
        this.statusBar.setStatus(msg.status);
        this.terminals.setLifecycle(msg.status.lifecycle);
        this.activity.jobs.setGeneration(msg.status.generation);
        this.setTitle(msg.status.profileName);
        return;
      case 'profiles':
        this.statusBar.setProfiles(msg.profiles);
        return;
      case 'audit':
        this.activity.audit.add(msg.row);
        this.activity.timeline.addRow(msg.row);
        return;
      case 'checkpoints':
        this.activity.timeline.setCheckpoints(msg.checkpoints);
        return;
      case 'job':
        this.activity.jobs.upsert(msg.job);
        if (msg.job.background || msg.job.state !== 'running') this.preview.ports.ask();
        if (this.launchOfPage && !this.focusedLaunchJob) this.onLaunch(this.launch);
        return;
      case 'log':
        this.activity.logs.add(msg.entry);
        return;
      case 'terminal.list':
        this.terminals.setList(msg.terminals);
        return;
      case 'terminal.attached':
        this.terminals.attached(msg.terminalId, msg.fromCursor);
        return;
      case 'terminal.output':
        this.terminals.output(msg.terminalId, msg.data, msg.cursor, msg.gap);
        return;
      case 'preview.state':
        this.preview.set(msg.preview);
        return;
      case 'preview.ports':
        this.preview.ports.set(msg.ports);
        return;
      case 'launch.progress':
        this.onLaunch(msg.launch);
        return;
      case 'agents':
        this.activity.agents.set(msg.agents);
        return;
      case 'agent.run':
        this.activity.agents.upsertRun(msg.run);
        return;
      case 'agent.details':
        this.activity.agents.runs.details(msg.run, msg.calls, msg.truncated);
        return;
      case 'approvals':
        this.approvals.set(msg.approvals);
        return;
      case 'agent.started':
        this.activity.agents.runs.open(msg.runId);
        return;
      case 'computers':
        this.statusBar.setComputers(msg.computers, msg.watching);
        this.activity.audit.setWatched(msg.watching);
        this.activity.timeline.setWatched(msg.watching);
        return;
      case 'webmcp.tools':
        void this.webmcp.register(msg.tools);
        return;
      case 'webmcp.result':
        this.webmcp.result(msg.callId, msg.result);
        return;
      case 'vm.boot':
      case 'vm.serial':
      case 'vm.stop':
        this.vmHost.handle(msg);
        return;
      case 'tools.review':
        this.toolReview.set(msg.changes);
        return;
      case 'terminal.journal':
        this.terminals.trust.journal(msg.terminalId, msg.entries);
        return;
      case 'reply':
        return;
    }
  }
}

new DockPage(document.getElementById('app')!).start();
