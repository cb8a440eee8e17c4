import { type AgentsConfig, agentsConfigSchema } from '../config/agents-schema.js';
import type { PolicyConfig } from '../config/schema.js';
import type { Notifier } from '../net/notifier.js';
import type { Sandbox } from '../policy/types.js';
import type { Disposable } from '../shared/disposable.js';
import { randomId } from '../shared/ids.js';
import type { Logger } from '../shared/logger.js';
import type { AgentRunStore, RunCall, RunQuery } from '../store/agent-runs.js';
import type { NamespaceOf } from '../tools/builtin/save-memory.js';
import type { Gateway } from '../tools/gateway.js';
import type { ToolRegistry } from '../tools/registry.js';
import { ActiveRuns } from './active-runs.js';
import { AgentCatalog } from './catalog.js';
import { type RunEvent, type RunEvents, runEvents } from './events.js';
import { type LauncherDeps, launchRun, type RunRequest, waitForDiscovery } from './launcher.js';
import { RunLeases } from './leases.js';
import { agentNamespaceOf } from './namespace.js';
import { providerConfigs } from './providers/index.js';
import { AgentScheduler, type NextRun } from './scheduler.js';
import { type AgentSummary, summarize } from './summary.js';
import type { AgentDefinition, AgentLoadError, AgentRun } from './types.js';

export type { RunRequest };

/** What the agents service is built from (all wired by the composition root). */
export interface AgentsDeps {
  projectDir: string;
  dataDir: string;
  gateway: Gateway;
  registry: ToolRegistry;
  integrations: {
    servers(): { name: string; state: string; registeredTools: number }[];
    discovered(): Promise<void>;
  };
  notifier: Notifier;
  /** The compiled global policy and its config (an agent's `policy` narrows them). */
  policy: Sandbox;
  policyConfig: PolicyConfig;
  logger: Logger;
  /** Where provider keys are read from (never passed on to tools or the computer). */
  env: NodeJS.ProcessEnv;
  /** paddock.yaml `agents`; its defaults when absent. */
  config?: AgentsConfig;
  /** The run store (main shares it with the memory namespaces). */
  store: AgentRunStore;
  /** This server's id: the owner of its runs' leases (a fresh one by default). */
  serverId?: string;
  /** How long a run's lease lasts and how often it is renewed (and expired leases swept). */
  lease?: { ttlMs: number; renewEveryMs: number };
  /** Guest directory where the computer mounts skill directories read-only (mentioned to the model when set). */
  skillsGuestRoot?: string;
  /** A link to an approval in the dock (sent to notify channels when a run waits). */
  approvalLink?: (approvalId: string) => string | undefined;
}

/** A run with its tool calls (nested ones included, with their depth). */
export interface RunDetails {
  run: AgentRun;
  calls: RunCall[];
}

/** Agents as markdown: definitions, runs, the scheduler, and events for the dock. */
export interface AgentsService {
  /** Loaded agents with their next scheduled time, running run and last run. */
  list(): Promise<AgentSummary[]>;
  definitions(): AgentDefinition[];
  /** Agent directories that did not load (file plus problems); the others are unaffected. */
  loadErrors(): AgentLoadError[];
  /** Re-reads `.paddock/agents` and skills; a started scheduler picks the new schedules up. */
  reload(): void;
  /**
   * Starts a run and returns at once (throws NOT_FOUND / INVALID_ARGUMENT for an unknown or
   * broken agent, LIMIT_EXCEEDED while it is running). `done` resolves with the final record;
   * it rejects only when the database itself fails.
   */
  start(name: string, request?: RunRequest): Promise<{ runId: string; done: Promise<AgentRun> }>;
  /** Runs an agent to its end and returns the record. */
  run(name: string, request?: RunRequest): Promise<AgentRun>;
  /** Cancels a run of this process; false when it is not running here. */
  cancel(runId: string): boolean;
  runs(query?: RunQuery): Promise<AgentRun[]>;
  show(runId: string): Promise<RunDetails | undefined>;
  scheduler: { start(): void; stop(): void; nextRuns(): NextRun[] };
  onRunEvent(listener: (event: RunEvent) => void): Disposable;
  /** Memory namespace resolver (`agent:<name>` for calls of a run) for the memory built-ins. */
  namespaceOf: NamespaceOf;
  /** Skill directories of a run in this process (for the computer's read-only mounts). */
  runContext(runId: string): { agent: string; skills: { name: string; dir: string }[] } | undefined;
  /** Stops the scheduler, cancels this process's runs and waits for them to end. */
  close(): Promise<void>;
}

/**
 * Builds the agents service: loads `.paddock/agents/<name>/AGENT.md` (bad agents become load
 * errors, logged as `agent.load_failed`), ends `running` rows left by a dead process, and wires
 * runner, run store, leases and scheduler. The scheduler does not start until `scheduler.start()`.
 */
export async function createAgents(deps: AgentsDeps): Promise<AgentsService> {
  const config = deps.config ?? agentsConfigSchema.parse({});
  const providers = providerConfigs(config);
  const logger = deps.logger.child({ domain: 'agents' });
  const { store } = deps;
  const events = runEvents(logger);
  const runs = new ActiveRuns(store);
  await endInterruptedRuns(store, logger);
  const leases = await startLeases(deps, runs, events, logger);
  const catalog = new AgentCatalog({
    projectDir: deps.projectDir,
    servers: () => deps.integrations.servers(),
    channelNames: () => deps.notifier.channelNames(),
    providers,
    config,
    policy: deps.policy,
    policyConfig: deps.policyConfig,
    logger,
  });
  catalog.load();
  const launcher: LauncherDeps = {
    runs,
    leases,
    providers,
    env: deps.env,
    dataDir: deps.dataDir,
    logger,
    runner: {
      gateway: deps.gateway,
      registry: deps.registry,
      store,
      notifier: deps.notifier,
      events,
      logger,
      toolResultMaxBytes: config.toolResultMaxBytes,
      awaitServers: (servers, signal) =>
        waitForDiscovery(deps.integrations, servers, config.discoveryTimeoutMs, signal),
      skillsGuestRoot: deps.skillsGuestRoot,
      approvalLink: deps.approvalLink,
    },
  };
  const scheduler = new AgentScheduler({
    store,
    events,
    logger,
    catchUpDefault: config.catchUp,
    isRunning: (agent) => runs.isRunning(agent),
    startRun: async (agent, trigger, input, scheduledAt) =>
      (await launchRun(launcher, agent, trigger, input === undefined ? {} : { input }, scheduledAt)).runId,
  });
  return agentsService({ catalog, runs, leases, scheduler, launcher, store, events });
}

/** Ends the `running` rows a dead process left (status `interrupted`). */
async function endInterruptedRuns(store: AgentRunStore, logger: Logger): Promise<void> {
  for (const run of await store.reconcile())
    logger.warn('agent.run_interrupted', { agent: run.agent, runId: run.id });
}

/** This server's leases on its runs: expired ones swept now, then renewed and swept on a timer. */
async function startLeases(
  deps: AgentsDeps,
  runs: ActiveRuns,
  events: RunEvents,
  logger: Logger,
): Promise<RunLeases> {
  const leases = new RunLeases({
    store: deps.store,
    serverId: deps.serverId ?? randomId('srv', 10),
    logger,
    ...(deps.lease ? deps.lease : {}),
    activeRuns: () => runs.size,
    onExpired: (run) => events.emit({ type: 'run.finished', run }),
  });
  await leases.sweep();
  leases.start();
  return leases;
}

/** The service over its parts. */
function agentsService(parts: {
  catalog: AgentCatalog;
  runs: ActiveRuns;
  leases: RunLeases;
  scheduler: AgentScheduler;
  launcher: LauncherDeps;
  store: AgentRunStore;
  events: RunEvents;
}): AgentsService {
  const { catalog, runs, leases, scheduler, launcher, store, events } = parts;
  let schedulerOn = false;
  const start = (name: string, request: RunRequest = {}) =>
    launchRun(launcher, catalog.find(name), request.trigger ?? 'manual', request);
  return {
    list: () =>
      Promise.all(
        catalog.agents.map(async (a) => {
          const running = runs.here(a.name) ?? (await runs.elsewhere(a.name))?.id ?? null;
          const [last] = await store.list({ agent: a.name, limit: 1 });
          return summarize(a, scheduler.nextRuns([a]), running, last);
        }),
      ),
    definitions: () => [...catalog.agents],
    loadErrors: () => [...catalog.errors],
    reload() {
      catalog.load();
      if (schedulerOn) scheduler.start(catalog.agents);
      events.emit({
        type: 'agents.reloaded',
        agents: catalog.agents.map((a) => a.name),
        errors: catalog.errors.map((e) => e.agent),
      });
    },
    start,
    run: async (name, request = {}) => (await start(name, request)).done,
    cancel(runId) {
      const run = runs.get(runId);
      if (!run) return false;
      run.controller.abort();
      return true;
    },
    runs: (query) => store.list(query),
    async show(runId) {
      const run = await store.get(runId);
      return run ? { run, calls: await store.calls(runId) } : undefined;
    },
    scheduler: {
      start() {
        schedulerOn = true;
        scheduler.start(catalog.agents);
      },
      stop() {
        schedulerOn = false;
        scheduler.stop();
      },
      nextRuns: () => scheduler.nextRuns(catalog.agents),
    },
    onRunEvent: (listener) => events.on(listener),
    namespaceOf: agentNamespaceOf((runId) => store.agentOf(runId)),
    runContext(runId) {
      const run = runs.get(runId);
      return run ? { agent: run.agent, skills: run.skills } : undefined;
    },
    async close() {
      schedulerOn = false;
      scheduler.stop();
      leases.stop();
      const pending = runs.all();
      for (const run of pending) run.controller.abort();
      await Promise.allSettled(pending.map((r) => r.done));
    },
  };
}
