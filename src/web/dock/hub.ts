/**
 * The dock's live channel (`/dock/ws`): pushes audit rows, status, jobs, logs, terminal
 * output and preview state to every connected page, and carries the person's actions
 * (launch, keystrokes, resize, preview navigation) back. Auth, Host and Origin are checked
 * by the web app before an upgrade reaches this hub.
 */
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import type { RawData, WebSocket, WebSocketServer } from 'ws';
import type { AuditStore, StoredInvocation } from '../../audit/types.js';
import { PaddockError, toPaddockError } from '../../shared/errors.js';
import type { Logger } from '../../shared/logger.js';
import { DockActions, type DockConnection, type DockLauncher } from './actions.js';
import type { DockCheckpointCalls } from './checkpoint-calls.js';
import { type ClientLimits, DEFAULT_CLIENT_LIMITS, DockClient } from './client.js';
import {
  type DockAuditRow,
  type DockCheckpointsState,
  type DockLaunchProgress,
  type DockSnapshot,
  MAX_CLIENT_MESSAGE_BYTES,
} from './protocol.js';
import type {
  ComputerChange,
  Disposable,
  DockAgents,
  DockApprovals,
  DockComputer,
  DockTools,
  LaunchLinkBoot,
} from './sources.js';
import { DockStoreState } from './store-state.js';
import type { DockToolReview } from './trust.js';
import { toDockAuditRow, UNAVAILABLE_STATUS } from './views.js';
import type { DockVmHosts } from './vm-hosts.js';

export type { DockLauncher };
export { toDockAuditRow };

/** Dependencies and limits of the hub. */
export interface DockHubOptions {
  audit: AuditStore;
  computer: DockComputer | null;
  /** The agents panel's source; without it the page shows no agents tab. */
  agents?: DockAgents | null;
  /** The approvals panel's source; while a page is connected it counts as an open dock session. */
  approvals?: DockApprovals | null;
  logger: Logger;
  version: string;
  /** Caller name of the person at the dock, e.g. `dock:owner`. */
  caller: string;
  /** How a launch from the page runs; default: `computer.launch`. */
  launch?: DockLauncher;
  /** The computer tools the page registers through WebMCP. */
  tools?: DockTools | null;
  /**
   * Boots a confirmed launch link (through the gateway, so both the launch and the script are
   * audited); resolves once the launch is accepted. Default: `computer.bootLaunchLink`.
   */
  bootLink?: (linkId: string) => Promise<{ boot: Promise<LaunchLinkBoot> }>;
  limits?: Partial<ClientLimits>;
  /** Rows, jobs and log entries in a snapshot. */
  snapshotAuditRows?: number;
  snapshotLogEntries?: number;
  /** Recent agent runs in a snapshot. Default 30. */
  snapshotAgentRuns?: number;
  /** Heartbeat: a page that does not answer a ping within this interval is dropped. */
  heartbeatMs?: number;
  /** The pages as hosts of browser computers; without it no page hosts one. */
  vmHosts?: DockVmHosts | null;
  /** Upstream tools awaiting a person's review (a notice on every page). */
  toolReview?: DockToolReview | null;
  /** Restore and fork from the timeline. */
  checkpoints?: DockCheckpointCalls | null;
  /** Whether a tool only reads (its audit rows are marked, and the timeline offers no undo of them). */
  readOnlyTool?: (tool: string) => boolean;
}

export class DockHub {
  /** Made on the first page's upgrade: a server nobody opens the dock of never loads `ws`. */
  private wss: Promise<WebSocketServer> | null = null;
  private closed = false;
  private readonly connections = new Set<DockConnection>();
  private readonly limits: ClientLimits;
  private sources: Disposable[] = [];
  private state: DockStoreState | null = null;
  private launch: DockLaunchProgress | null = null;
  private readonly heartbeat: NodeJS.Timeout;
  private readonly actions: DockActions;
  /** The watched computer's checkpoints as last listed (null until listed). */
  private checkpoints: DockCheckpointsState | null = null;
  /** Counts listings, so a slow one never overwrites a newer one. */
  private checkpointListings = 0;

  constructor(private readonly options: DockHubOptions) {
    this.limits = { ...DEFAULT_CLIENT_LIMITS, ...options.limits };
    this.actions = new DockActions({
      computer: options.computer,
      agents: options.agents ?? null,
      approvals: options.approvals ?? null,
      logger: options.logger,
      caller: options.caller,
      launch: options.launch,
      tools: options.tools ?? null,
      vmHosts: options.vmHosts ?? null,
      toolReview: options.toolReview ?? null,
      checkpoints: options.checkpoints ?? null,
    });
    this.heartbeat = setInterval(() => this.beat(), options.heartbeatMs ?? 30_000);
    this.heartbeat.unref();
  }

  /** Number of connected pages. */
  get size(): number {
    return this.connections.size;
  }

  /** Queue counters of every connected page (diagnostics and tests). */
  stats() {
    return [...this.connections].map((c) => c.client.stats());
  }

  /** Completes an upgrade the web app already authenticated. */
  handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void {
    if (this.closed) {
      socket.destroy();
      return;
    }
    this.wss ??= import('ws').then(
      ({ WebSocketServer }) =>
        new WebSocketServer({
          noServer: true,
          maxPayload: MAX_CLIENT_MESSAGE_BYTES,
          perMessageDeflate: false,
        }),
    );
    void this.wss.then((wss) => {
      if (this.closed) socket.destroy();
      else wss.handleUpgrade(req, socket, head, (ws) => this.connect(ws));
    });
  }

  /** Everything a page needs to render; `resync` after dropped messages. */
  snapshot(resync: boolean): DockSnapshot {
    const c = this.options.computer;
    const rows = this.state?.recentAudit() ?? [];
    return {
      type: 'snapshot',
      resync,
      version: this.options.version,
      caller: this.options.caller,
      features: { computer: c !== null, terminals: c?.terminals != null, preview: c?.preview != null },
      status: c ? c.status() : UNAVAILABLE_STATUS,
      profiles: c ? c.profiles() : [],
      audit: rows.map((r) => this.auditRow(r)),
      jobs: c ? c.jobs() : [],
      logs: c ? c.recentLogs(this.options.snapshotLogEntries ?? 300) : [],
      terminals: c?.terminals ? c.terminals.list() : [],
      preview: c?.preview ? c.preview.state() : null,
      launch: this.launch,
      agents: this.state?.agents ?? null,
      computers: c?.computers?.() ?? [],
      watching: c?.watching?.() ?? null,
      approvals: this.state?.approvals ?? null,
      checkpoints: this.checkpoints,
    };
  }

  /**
   * Boots a launch link the person confirmed. Rejects when the launch is refused at once
   * (unknown link, profile unavailable, a boot in progress); otherwise the boot continues in
   * the background and its progress is pushed to every page.
   */
  async confirmLaunch(linkId: string): Promise<void> {
    const c = this.options.computer;
    if (!c)
      throw new PaddockError('UNSUPPORTED_CAPABILITY', 'This server runs without the computer service.');
    let booting: Promise<LaunchLinkBoot>;
    if (this.options.bootLink) {
      // through the gateway: a refused launch rejects here, the boot and the script go on
      booting = (await this.options.bootLink(linkId)).boot;
    } else {
      booting = c.bootLaunchLink(linkId);
      const early = await Promise.race([
        booting.then(
          () => null,
          (e: unknown) => toPaddockError(e),
        ),
        new Promise<null>((resolve) => setImmediate(() => resolve(null))),
      ]);
      if (early) throw early;
    }
    this.setLaunch({ linkId, state: 'booting', jobId: null, terminalId: null, error: null });
    booting.then(
      (r) =>
        this.setLaunch({
          linkId,
          state: r.lifecycle === 'running' ? 'running' : 'error',
          jobId: r.jobId,
          terminalId: r.terminalId ?? null,
          error: r.bootError,
        }),
      (e: unknown) => {
        const error = toPaddockError(e);
        this.options.logger.warn('dock.launch_link_failed', {
          linkId,
          code: error.code,
          error: error.message,
        });
        this.setLaunch({ linkId, state: 'error', jobId: null, terminalId: null, error: error.message });
      },
    );
  }

  /** Closes every page's socket. */
  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.heartbeat);
    for (const conn of this.connections) conn.ws.terminate();
    this.release();
    const wss = await this.wss;
    if (wss) await new Promise<void>((resolve) => wss.close(() => resolve()));
  }

  private setLaunch(launch: DockLaunchProgress): void {
    this.launch = launch;
    this.broadcast({ type: 'launch.progress', launch }, 'launch');
  }

  private connect(ws: WebSocket): void {
    const client = new DockClient(ws, () => this.snapshot(true), this.limits);
    const conn: DockConnection = { ws, client, terminals: new Map(), calls: new Map(), alive: true };
    this.connections.add(conn);
    if (this.connections.size === 1) this.acquire();
    ws.on('pong', () => {
      conn.alive = true;
    });
    ws.on('message', (data: RawData, isBinary: boolean) => {
      void this.actions.handle(conn, data, isBinary);
    });
    ws.on('close', () => {
      this.options.vmHosts?.drop(conn);
      for (const sub of conn.terminals.values()) sub.dispose();
      conn.terminals.clear();
      for (const call of conn.calls.values())
        call.abort(new PaddockError('CHANNEL_CLOSED', 'The dock page went away.'));
      conn.calls.clear();
      this.connections.delete(conn);
      if (this.connections.size === 0) this.release();
    });
    ws.on('error', (e: Error) => this.options.logger.debug('dock.socket_error', { error: e.message }));
    const loaded = this.state?.loaded ?? Promise.resolve();
    void loaded.then(() => {
      client.send(this.snapshot(false));
      const changes = this.options.toolReview?.changes() ?? [];
      if (changes.length > 0) client.send({ type: 'tools.review', changes });
    });
  }

  /** Subscribes to the sources while at least one page is connected, and reads the stores once. */
  private acquire(): void {
    const { audit, computer, agents, approvals } = this.options;
    this.state = new DockStoreState({
      audit,
      agents: agents ?? null,
      approvals: approvals ?? null,
      logger: this.options.logger,
      auditRows: this.options.snapshotAuditRows ?? 200,
      agentRuns: this.options.snapshotAgentRuns ?? 30,
      broadcast: (message, key) => this.broadcast(message, key),
      auditRow: (row) => this.auditRow(row),
    });
    const review = this.options.toolReview;
    if (review) {
      this.sources.push(
        review.onChange(() =>
          this.broadcast({ type: 'tools.review', changes: review.changes() }, 'tools.review'),
        ),
      );
    }
    if (!computer) return;
    this.sources.push(computer.onChange((change) => this.onComputerChange(computer, change)));
    this.listCheckpoints(computer);
    const terminals = computer.terminals;
    if (terminals) {
      this.sources.push(
        terminals.onChange(() =>
          this.broadcast({ type: 'terminal.list', terminals: terminals.list() }, 'terminal.list'),
        ),
      );
    }
    if (computer.preview) {
      this.sources.push(
        computer.preview.onChange((preview) => this.broadcast({ type: 'preview.state', preview }, 'preview')),
      );
    }
  }

  private release(): void {
    for (const s of this.sources) s.dispose();
    this.sources = [];
    this.state?.dispose();
    this.state = null;
    this.checkpoints = null;
  }

  /** Lists the watched computer's checkpoints again and pushes them to every page. */
  private listCheckpoints(computer: DockComputer): void {
    if (!computer.checkpoints) return;
    const listing = ++this.checkpointListings;
    computer.checkpoints().then(
      (state) => {
        if (listing !== this.checkpointListings || this.state === null) return;
        this.checkpoints = state;
        if (state) this.broadcast({ type: 'checkpoints', checkpoints: state }, 'checkpoints');
      },
      (e: unknown) => this.options.logger.warn('dock.checkpoints_failed', { error: (e as Error).message }),
    );
  }

  private onComputerChange(computer: DockComputer, change: ComputerChange): void {
    switch (change.kind) {
      case 'status':
        this.broadcast({ type: 'status', status: computer.status() }, 'status');
        return;
      case 'profiles':
        this.broadcast({ type: 'profiles', profiles: computer.profiles() }, 'profiles');
        return;
      case 'log':
        this.broadcast({ type: 'log', entry: change.entry });
        return;
      case 'job': {
        const job = computer.job(change.jobId);
        if (job) this.broadcast({ type: 'job', job }, `job:${job.jobId}`);
        return;
      }
      case 'computers':
        this.broadcast(
          {
            type: 'computers',
            computers: computer.computers?.() ?? [],
            watching: computer.watching?.() ?? null,
          },
          'computers',
        );
        return;
      case 'checkpoints':
        this.listCheckpoints(computer);
        return;
      case 'watch':
        // another computer: its terminals are other terminals, and every panel starts over
        this.checkpoints = null;
        this.listCheckpoints(computer);
        for (const conn of this.connections) {
          for (const sub of conn.terminals.values()) sub.dispose();
          conn.terminals.clear();
          conn.client.send(this.snapshot(true));
        }
        return;
    }
  }

  private auditRow(row: StoredInvocation): DockAuditRow {
    const computer = this.options.computer;
    const shown = toDockAuditRow(
      row,
      computer?.computerOf?.bind(computer),
      computer?.callerLabel?.bind(computer),
    );
    return this.options.readOnlyTool?.(row.tool) ? { ...shown, readOnly: true } : shown;
  }

  private broadcast(message: Parameters<DockClient['send']>[0], key?: string): void {
    for (const conn of this.connections) conn.client.send(message, key);
  }

  private beat(): void {
    for (const conn of this.connections) {
      if (!conn.alive) {
        conn.ws.terminate();
        continue;
      }
      conn.alive = false;
      conn.ws.ping();
    }
  }
}
