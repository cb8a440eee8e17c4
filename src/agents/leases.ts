import type { Logger } from '../shared/logger.js';
import type { AgentRun, AgentRunStore } from '../store/agent-runs.js';

/** How long a run's lease lasts when nothing else is said. */
export const DEFAULT_LEASE_TTL_MS = 60_000;
/** How often leases are renewed and expired ones swept (well inside the lease). */
export const DEFAULT_LEASE_RENEW_MS = 15_000;

export interface RunLeasesOptions {
  store: AgentRunStore;
  /** This server's id: the owner written on its runs. */
  serverId: string;
  logger: Logger;
  ttlMs?: number;
  renewEveryMs?: number;
  /** How many runs this server has going (renewal is skipped when none). */
  activeRuns(): number;
  /** Told of each run of another server that this one marked failed. */
  onExpired(run: AgentRun): void;
}

/**
 * Leases of agent runs, for servers sharing one store: every run carries its server's id and
 * a lease expiry; while the server lives it renews the leases of its running runs, and every
 * server marks failed the running runs whose lease passed (their server stopped without
 * ending them). With one embedded store the same holds for a process that died.
 */
export class RunLeases {
  readonly serverId: string;
  private readonly ttlMs: number;
  private readonly renewEveryMs: number;
  private timer: NodeJS.Timeout | undefined;
  private busy = false;

  constructor(private readonly options: RunLeasesOptions) {
    this.serverId = options.serverId;
    this.ttlMs = options.ttlMs ?? DEFAULT_LEASE_TTL_MS;
    this.renewEveryMs = options.renewEveryMs ?? DEFAULT_LEASE_RENEW_MS;
  }

  /** The lease expiry of a run starting or renewed now. */
  expiry(now = Date.now()): number {
    return now + this.ttlMs;
  }

  /** Renews this server's leases and sweeps expired ones every `renewEveryMs`, until `stop`. */
  start(): void {
    this.stop();
    this.timer = setInterval(() => void this.tick(), this.renewEveryMs);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }

  /** Marks failed every running run whose lease passed; returns them. */
  async sweep(now = Date.now()): Promise<AgentRun[]> {
    const ended = await this.options.store.expireLeases(now);
    for (const run of ended) {
      this.options.logger.warn('agent.run_lease_expired', {
        agent: run.agent,
        runId: run.id,
        owner: run.owner,
      });
      this.options.onExpired(run);
    }
    return ended;
  }

  private async tick(): Promise<void> {
    if (this.busy) return;
    this.busy = true;
    try {
      if (this.options.activeRuns() > 0) await this.options.store.renewLeases(this.serverId, this.expiry());
      await this.sweep();
    } catch (e) {
      this.options.logger.error('agent.lease_failed', { error: e instanceof Error ? e.message : String(e) });
    } finally {
      this.busy = false;
    }
  }
}
