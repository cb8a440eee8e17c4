/**
 * What the stores said last, kept while pages are connected so that a snapshot (and a resync
 * of a slow page) is built at once: the newest audit rows, the agents panel and the approvals
 * panel, each read when the first page connects and kept current from the sources' events.
 */
import type { AuditStore, StoredInvocation } from '../../audit/types.js';
import type { Disposable } from '../../shared/disposable.js';
import type { Logger } from '../../shared/logger.js';
import type { DockAgentsState, DockApprovalsState, DockAuditRow, ServerMessage } from './protocol.js';
import type { AgentsChange, DockAgents, DockApprovals } from './sources.js';

export interface DockStoreStateOptions {
  audit: AuditStore;
  agents: DockAgents | null;
  approvals: DockApprovals | null;
  logger: Logger;
  /** Audit rows in a snapshot. */
  auditRows: number;
  /** Recent agent runs in a snapshot. */
  agentRuns: number;
  broadcast(message: ServerMessage, key?: string): void;
  auditRow(row: StoredInvocation): DockAuditRow;
}

/** The hub's store-backed state while at least one page is connected. */
export class DockStoreState {
  agents: DockAgentsState | null = null;
  approvals: DockApprovalsState | null = null;
  /** Settles once the first reads are in (failures are logged; the panels then start empty). */
  readonly loaded: Promise<void>;
  private audit: StoredInvocation[] = [];
  private readonly subscriptions: Disposable[] = [];
  /** A read started later than the applied one wins (results can arrive out of order). */
  private agentsRead = 0;
  private approvalsRead = 0;
  private disposed = false;

  constructor(private readonly o: DockStoreStateOptions) {
    this.subscriptions.push(
      o.audit.subscribe((row) => {
        this.audit.push(row);
        if (this.audit.length > 2 * o.auditRows) this.recentAudit();
        o.broadcast({ type: 'audit', row: o.auditRow(row) });
      }),
    );
    const { approvals, agents } = o;
    if (approvals) {
      this.subscriptions.push(
        approvals.onChange(() => void this.refreshApprovals().catch((e) => this.failed('approvals', e))),
      );
    }
    if (agents) this.subscriptions.push(agents.onChange((change) => this.onAgentsChange(agents, change)));
    this.loaded = this.load().catch((e: unknown) => this.failed('snapshot', e));
  }

  /** The newest audit rows known, oldest first. */
  recentAudit(): StoredInvocation[] {
    const byId = new Map(this.audit.map((r) => [r.id, r]));
    this.audit = [...byId.values()].sort((a, b) => a.seq - b.seq).slice(-this.o.auditRows);
    return this.audit;
  }

  dispose(): void {
    this.disposed = true;
    for (const s of this.subscriptions) s.dispose();
  }

  /** Definitions, load errors and recent runs; null without an agents source. */
  private async agentsState(): Promise<DockAgentsState | null> {
    const agents = this.o.agents;
    if (!agents) return null;
    return {
      agents: await agents.list(),
      loadErrors: agents.loadErrors(),
      runs: await agents.runs(this.o.agentRuns),
    };
  }

  private async load(): Promise<void> {
    const [rows] = await Promise.all([
      this.o.audit.query({ limit: this.o.auditRows }),
      this.refreshAgents(),
      this.refreshApprovals(),
    ]);
    this.audit = [...rows, ...this.audit];
  }

  private async refreshAgents(): Promise<void> {
    const read = ++this.agentsRead;
    const agents = await this.agentsState();
    if (read !== this.agentsRead || this.disposed) return;
    this.agents = agents;
    if (agents) this.o.broadcast({ type: 'agents', agents }, 'agents');
  }

  private async refreshApprovals(): Promise<void> {
    const source = this.o.approvals;
    if (!source) return;
    const read = ++this.approvalsRead;
    const approvals = await source.state();
    if (read !== this.approvalsRead || this.disposed) return;
    this.approvals = approvals;
    this.o.broadcast({ type: 'approvals', approvals }, 'approvals');
  }

  /** Keyed like the computer's state messages, so a slow page holds one of each at most. */
  private onAgentsChange(agents: DockAgents, change: AgentsChange): void {
    if (change.kind === 'agents') {
      void this.refreshAgents().catch((e: unknown) => this.failed('agents', e));
      return;
    }
    agents.run(change.runId).then(
      (run) => {
        if (run && !this.disposed) this.o.broadcast({ type: 'agent.run', run }, `agent.run:${run.id}`);
      },
      (e: unknown) => this.failed('agents', e),
    );
  }

  private failed(what: string, e: unknown): void {
    this.o.logger.warn('dock.store_read_failed', { what, error: e instanceof Error ? e.message : String(e) });
  }
}
