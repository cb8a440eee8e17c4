import { Cron } from 'croner';
import type { Logger } from '../shared/logger.js';
import type { AgentRunStore } from '../store/agent-runs.js';
import type { RunEvents } from './events.js';
import { CRON_MODE, cronOf } from './schedules.js';
import type { AgentDefinition, ScheduleDefinition } from './types.js';

/** Most missed ticks counted for the log (the catch-up is one run however many were missed). */
export const MAX_COUNTED_MISSED_TICKS = 1000;

/** The next time of one schedule. */
export interface NextRun {
  agent: string;
  cron: string;
  timezone?: string;
  key: string;
  /** Epoch ms, or null when the expression never fires again. */
  next: number | null;
}

/** What the scheduler needs from the agents service. */
export interface SchedulerDeps {
  store: AgentRunStore;
  events: RunEvents;
  logger: Logger;
  /** paddock.yaml `agents.catchUp`; an agent's own `catchUp` wins. */
  catchUpDefault: boolean;
  /** True while the agent has a run going (in this process or another live one). */
  isRunning(agent: string): Promise<boolean>;
  /** Starts a run in the background and returns its id. */
  startRun(
    agent: AgentDefinition,
    trigger: 'schedule' | 'catch-up',
    input: string | undefined,
    scheduledAt: number,
  ): Promise<string>;
}

/**
 * Fires agents on their cron schedules (croner) while `paddock serve` runs.
 * - No overlap: a tick while the agent still runs is skipped and logged (`agent.tick_skipped`).
 * - Each tick is claimed in the store before it starts a run (`claimTick`), so a tick is
 *   handled once even if two timers (or two servers on one store) see it.
 * - After downtime, missed ticks are not replayed: at start, an agent with ticks missed since
 *   its last handled one gets at most one `catch-up` run (or none, if catch-up is off); the
 *   missed tick is claimed too, so of two servers starting together one catches up.
 */
export class AgentScheduler {
  private jobs: { agent: AgentDefinition; schedule: ScheduleDefinition; cron: Cron }[] = [];
  private agents: AgentDefinition[] = [];

  constructor(private readonly deps: SchedulerDeps) {}

  /** Starts timers for every schedule of `agents` (replacing earlier ones) and runs the catch-up check. */
  start(agents: readonly AgentDefinition[], now = Date.now()): void {
    this.stop();
    this.agents = [...agents];
    for (const agent of this.agents) {
      if (agent.schedules.length === 0) continue;
      void this.catchUp(agent, now).catch((e: unknown) =>
        this.deps.logger.error('agent.catch_up_failed', { agent: agent.name, error: (e as Error).message }),
      );
      for (const schedule of agent.schedules) {
        const cron = new Cron(
          schedule.cron,
          { mode: CRON_MODE, unref: true, ...(schedule.timezone ? { timezone: schedule.timezone } : {}) },
          () => void this.tick(agent, schedule),
        );
        this.jobs.push({ agent, schedule, cron });
      }
    }
    this.deps.logger.info('agent.scheduler_started', { schedules: this.jobs.length });
  }

  /** Stops every timer; runs already started continue. */
  stop(): void {
    for (const job of this.jobs) job.cron.stop();
    this.jobs = [];
  }

  /** The next time of every schedule of the agents given to `start` (or of `agents`). */
  nextRuns(agents: readonly AgentDefinition[] = this.agents): NextRun[] {
    return agents.flatMap((agent) =>
      agent.schedules.map((s) => ({
        agent: agent.name,
        cron: s.cron,
        ...(s.timezone ? { timezone: s.timezone } : {}),
        key: s.key,
        next: cronOf(s).nextRun()?.getTime() ?? null,
      })),
    );
  }

  private async tick(agent: AgentDefinition, schedule: ScheduleDefinition): Promise<void> {
    // croner fires at or just after the scheduled second; the second is the tick's identity
    const scheduledAt = Math.floor(Date.now() / 1000) * 1000;
    const { store, logger, events } = this.deps;
    try {
      if (!(await store.claimTick(agent.name, schedule.key, scheduledAt))) return;
      if (await this.deps.isRunning(agent.name)) {
        const reason = 'the previous run of this agent is still going';
        logger.info('agent.tick_skipped', { agent: agent.name, schedule: schedule.cron, reason });
        events.emit({
          type: 'schedule.tick',
          agent: agent.name,
          schedule: schedule.key,
          scheduledAt,
          action: 'skipped',
          reason,
        });
        return;
      }
      const runId = await this.deps.startRun(agent, 'schedule', schedule.input, scheduledAt);
      events.emit({
        type: 'schedule.tick',
        agent: agent.name,
        schedule: schedule.key,
        scheduledAt,
        action: 'started',
        runId,
      });
    } catch (e) {
      logger.error('agent.tick_failed', {
        agent: agent.name,
        schedule: schedule.cron,
        error: (e as Error).message,
      });
    }
  }

  /** At most one catch-up run per agent for ticks missed while no scheduler ran. */
  private async catchUp(agent: AgentDefinition, now: number): Promise<void> {
    const { store, logger, events } = this.deps;
    let missed = 0;
    let latest: { schedule: ScheduleDefinition; at: number } | undefined;
    for (const schedule of agent.schedules) {
      const cron = cronOf(schedule);
      const previous = cron.previousRuns(1, new Date(now))[0]?.getTime();
      const last = await store.lastTick(agent.name, schedule.key);
      if (last === undefined || previous === undefined) {
        // first sight of this schedule: nothing was missed yet
        await store.setLastTick(agent.name, schedule.key, previous ?? now);
        continue;
      }
      if (previous <= last) continue;
      // another server starting at the same time may have claimed the missed tick first
      if (!(await store.claimTick(agent.name, schedule.key, previous))) continue;
      missed += cron
        .nextRuns(MAX_COUNTED_MISSED_TICKS, new Date(last))
        .filter((d) => d.getTime() <= now).length;
      if (!latest || previous > latest.at) latest = { schedule, at: previous };
    }
    if (!latest) return;
    const enabled = agent.catchUp ?? this.deps.catchUpDefault;
    const base = { agent: agent.name, schedule: latest.schedule.key, scheduledAt: latest.at };
    if (!enabled) {
      logger.info('agent.missed_ticks_skipped', { agent: agent.name, missed, reason: 'catch-up is off' });
      events.emit({
        type: 'schedule.tick',
        ...base,
        action: 'skipped',
        reason: `catch-up is off (${missed} missed)`,
      });
      return;
    }
    if (await this.deps.isRunning(agent.name)) {
      logger.info('agent.missed_ticks_skipped', {
        agent: agent.name,
        missed,
        reason: 'a run is still going',
      });
      events.emit({ type: 'schedule.tick', ...base, action: 'skipped', reason: 'a run is still going' });
      return;
    }
    logger.info('agent.catch_up', {
      agent: agent.name,
      missed,
      scheduledAt: new Date(latest.at).toISOString(),
    });
    const runId = await this.deps.startRun(agent, 'catch-up', latest.schedule.input, latest.at);
    events.emit({
      type: 'schedule.tick',
      ...base,
      action: 'catch-up',
      reason: `${missed} tick(s) missed`,
      runId,
    });
  }
}
