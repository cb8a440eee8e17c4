/**
 * Which agents are running: the runs of this process, the agents between the "is it running"
 * check and their run's start, and runs of other processes or servers sharing the store that
 * are still alive (by lease, or by pid on this machine). One agent runs once at a time.
 */
import { PaddockError } from '../shared/errors.js';
import { pidAlive } from '../shared/pid.js';
import type { AgentRunStore } from '../store/agent-runs.js';
import type { AgentRun } from './types.js';

/** A run of this process. */
export interface ActiveRun {
  agent: string;
  skills: { name: string; dir: string }[];
  controller: AbortController;
  done: Promise<AgentRun>;
}

/** The runs of this process and the way to claim an agent's single run. */
export class ActiveRuns {
  private readonly runs = new Map<string, ActiveRun>();
  /** Agents between the "is it running" check and their run's entry in `runs`. */
  private readonly launching = new Set<string>();

  constructor(private readonly store: Pick<AgentRunStore, 'running'>) {}

  get size(): number {
    return this.runs.size;
  }

  get(runId: string): ActiveRun | undefined {
    return this.runs.get(runId);
  }

  all(): ActiveRun[] {
    return [...this.runs.values()];
  }

  /** The id of `agent`'s run in this process. */
  here(agent: string): string | undefined {
    return [...this.runs.entries()].find(([, r]) => r.agent === agent)?.[0];
  }

  /** A run of `agent` by another process or server that is still alive (by lease or pid). */
  async elsewhere(agent: string): Promise<AgentRun | undefined> {
    return (await this.store.running()).find(
      (r) =>
        r.agent === agent &&
        !this.runs.has(r.id) &&
        (r.leaseExpiresAt != null
          ? r.leaseExpiresAt >= Date.now()
          : r.pid !== process.pid && r.pid !== null && pidAlive(r.pid)),
    );
  }

  async isRunning(agent: string): Promise<boolean> {
    return (
      this.here(agent) !== undefined ||
      this.launching.has(agent) ||
      (await this.elsewhere(agent)) !== undefined
    );
  }

  /**
   * Claims `agent`'s single run: LIMIT_EXCEEDED, naming the run, while it runs here or elsewhere.
   * The claim ends with `started` (the run is in the table) or `release` (it never started).
   */
  async claim(agent: string): Promise<void> {
    const here = this.here(agent) ?? (this.launching.has(agent) ? '(starting)' : undefined);
    if (here) throw busy(agent, here);
    this.launching.add(agent);
    try {
      const other = (await this.elsewhere(agent))?.id;
      if (other) throw busy(agent, other);
    } catch (e) {
      this.launching.delete(agent);
      throw e;
    }
  }

  /** The claimed agent's run started as `runId`. */
  started(runId: string, run: ActiveRun): void {
    this.runs.set(runId, run);
    this.launching.delete(run.agent);
  }

  /** Run `runId` ended (before its `done` settles for anyone else). */
  ended(runId: string): void {
    this.runs.delete(runId);
  }

  /** The claim of an agent whose run did not start. */
  release(agent: string): void {
    this.launching.delete(agent);
  }
}

function busy(agent: string, runId: string): PaddockError {
  return new PaddockError(
    'LIMIT_EXCEEDED',
    `Agent "${agent}" is already running (run ${runId}); wait for it to end or cancel it, then start it again.`,
    { runId },
  );
}
