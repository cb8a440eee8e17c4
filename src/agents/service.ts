import { type AgentsConfig, agentsConfigSchema } from '../config/agents-schema.js';
import type { PolicyConfig } from '../config/schema.js';
import type { Notifier } from '../net/notifier.js';
import type { Sandbox } from '../policy/types.js';
import type { Disposable } from '../shared/disposable.js';
import { PaddockError } from '../shared/errors.js';
import { randomId } from '../shared/ids.js';
import type { Logger } from '../shared/logger.js';
import { pidAlive } from '../shared/pid.js';
import type { AgentRunStore, RunCall, RunQuery } from '../store/agent-runs.js';
import type { NamespaceOf } from '../tools/builtin/save-memory.js';
import type { Gateway } from '../tools/gateway.js';
import type { ToolRegistry } from '../tools/registry.js';
import { type RunEvent, runEvents } from './events.js';
import { RunLeases } from './leases.js';
import { type LoadedAgents, loadAgents } from './load-agents.js';
import { agentNamespaceOf } from './namespace.js';
import { createProvider, providerConfigs } from './providers/index.js';
import { executeRun } from './runner.js';
import { AgentScheduler, type NextRun } from './scheduler.js';
import { type AgentSummary, summarize } from './summary.js';
import type { AgentDefinition, AgentLoadError, AgentRun, RunTrigger } from './types.js';

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

/** How a run is started. */
export interface RunRequest {
  input?: string;
  trigger?: RunTrigger;
  /** Cancels the run (status `cancelled`). */
  signal?: AbortSignal;
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
  const store = deps.store;
  const events = runEvents(logger);
  const active = new Map<
    string,
    {
      agent: string;
      skills: { name: string; dir: string }[];
      controller: AbortController;
      done: Promise<AgentRun>;
    }
  >();
  /** Agents between the "is it running" check and their run's entry in `active`. */
  const launching = new Set<string>();
  for (const run of await store.reconcile())
    logger.warn('agent.run_interrupted', { agent: run.agent, runId: run.id });
  const leases = new RunLeases({
    store,
    serverId: deps.serverId ?? randomId('srv', 10),
    logger,
    ...(deps.lease ? deps.lease : {}),
    activeRuns: () => active.size,
    onExpired: (run) => events.emit({ type: 'run.finished', run }),
  });
  await leases.sweep();
  leases.start();

  let loaded: LoadedAgents = { agents: [], errors: [] };
  const load = () => {
    loaded = loadAgents({
      projectDir: deps.projectDir,
      servers: deps.integrations.servers(),
      channels: deps.notifier.channelNames(),
      providers,
      defaultProvider: config.defaultProvider,
      globalPolicy: deps.policy,
      globalPolicyConfig: deps.policyConfig,
      limits: config.limits,
    });
    for (const e of loaded.errors)
      logger.error('agent.load_failed', { agent: e.agent, file: e.file, problems: e.problems });
    for (const a of loaded.agents)
      for (const w of a.warnings) logger.warn('agent.load_warning', { agent: a.name, warning: w });
  };
  load();

  const runningHere = (agent: string) => [...active.entries()].find(([, r]) => r.agent === agent)?.[0];
  /** A run of `agent` by another process or server that is still alive (by pid or lease). */
  const runningElsewhere = async (agent: string) =>
    (await store.running()).find(
      (r) =>
        r.agent === agent &&
        !active.has(r.id) &&
        (r.leaseExpiresAt != null
          ? r.leaseExpiresAt >= Date.now()
          : r.pid !== process.pid && r.pid !== null && pidAlive(r.pid)),
    );
  const isRunning = async (agent: string) =>
    runningHere(agent) !== undefined || launching.has(agent) || (await runningElsewhere(agent)) !== undefined;

  const awaitServers = async (servers: readonly string[], signal: AbortSignal) => {
    const pending = deps.integrations
      .servers()
      .some((s) => servers.includes(s.name) && s.state !== 'disabled' && s.registeredTools === 0);
    if (!pending || config.discoveryTimeoutMs === 0) return;
    await new Promise<void>((resolve) => {
      const timer = setTimeout(done, config.discoveryTimeoutMs);
      function done() {
        clearTimeout(timer);
        signal.removeEventListener('abort', done);
        resolve();
      }
      signal.addEventListener('abort', done, { once: true });
      deps.integrations.discovered().then(done, done);
    });
  };

  const find = (name: string): AgentDefinition => {
    const agent = loaded.agents.find((a) => a.name === name);
    if (agent) return agent;
    const broken = loaded.errors.find((e) => e.agent === name);
    if (broken) {
      throw new PaddockError(
        'INVALID_ARGUMENT',
        `Agent "${name}" did not load (${broken.file}):\n${broken.problems.map((p) => `  ${p}`).join('\n')}`,
        { problems: broken.problems },
      );
    }
    const names = loaded.agents.map((a) => a.name);
    throw new PaddockError(
      'NOT_FOUND',
      `There is no agent "${name}"; ${names.length ? `use one of: ${names.join(', ')}` : `create .paddock/agents/${name}/AGENT.md`}.`,
    );
  };

  const launch = async (
    agent: AgentDefinition,
    trigger: RunTrigger,
    request: RunRequest,
    scheduledAt?: number,
  ) => {
    const busy = (other: string) =>
      new PaddockError(
        'LIMIT_EXCEEDED',
        `Agent "${agent.name}" is already running (run ${other}); wait for it to end or cancel it, then start it again.`,
        { runId: other },
      );
    const here = runningHere(agent.name) ?? (launching.has(agent.name) ? '(starting)' : undefined);
    if (here) throw busy(here);
    launching.add(agent.name);
    try {
      const other = (await runningElsewhere(agent.name))?.id;
      if (other) throw busy(other);
    } catch (e) {
      launching.delete(agent.name);
      throw e;
    }
    const runId = randomId('run');
    const controller = new AbortController();
    const onAbort = () => controller.abort();
    if (request.signal?.aborted) controller.abort();
    else request.signal?.addEventListener('abort', onAbort, { once: true });
    const done = executeRun(
      agent,
      {
        runId,
        trigger,
        input: request.input,
        scheduledAt,
        owner: leases.serverId,
        leaseExpiresAt: leases.expiry(),
        signal: controller.signal,
        provider: () =>
          createProvider(agent.provider, agent.model, providers, {
            env: deps.env,
            dataDir: deps.dataDir,
            onRetry: (info) => logger.warn('agent.provider_retry', { agent: agent.name, runId, ...info }),
          }),
      },
      {
        gateway: deps.gateway,
        registry: deps.registry,
        store,
        notifier: deps.notifier,
        events,
        logger,
        toolResultMaxBytes: config.toolResultMaxBytes,
        awaitServers,
        skillsGuestRoot: deps.skillsGuestRoot,
        approvalLink: deps.approvalLink,
      },
    ).finally(() => {
      active.delete(runId);
      request.signal?.removeEventListener('abort', onAbort);
    });
    active.set(runId, {
      agent: agent.name,
      skills: agent.skills.map((s) => ({ name: s.name, dir: s.dir })),
      controller,
      done,
    });
    launching.delete(agent.name);
    return { runId, done };
  };

  const scheduler = new AgentScheduler({
    store,
    events,
    logger,
    catchUpDefault: config.catchUp,
    isRunning,
    startRun: async (agent, trigger, input, scheduledAt) =>
      (await launch(agent, trigger, input === undefined ? {} : { input }, scheduledAt)).runId,
  });
  let schedulerOn = false;

  return {
    list: () =>
      Promise.all(
        loaded.agents.map(async (a) => {
          const running = runningHere(a.name) ?? (await runningElsewhere(a.name))?.id ?? null;
          const [last] = await store.list({ agent: a.name, limit: 1 });
          return summarize(a, scheduler.nextRuns([a]), running, last);
        }),
      ),
    definitions: () => [...loaded.agents],
    loadErrors: () => [...loaded.errors],
    reload() {
      load();
      if (schedulerOn) scheduler.start(loaded.agents);
      events.emit({
        type: 'agents.reloaded',
        agents: loaded.agents.map((a) => a.name),
        errors: loaded.errors.map((e) => e.agent),
      });
    },
    start: (name, request = {}) => launch(find(name), request.trigger ?? 'manual', request),
    run: async (name, request = {}) => (await launch(find(name), request.trigger ?? 'manual', request)).done,
    cancel(runId) {
      const run = active.get(runId);
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
        scheduler.start(loaded.agents);
      },
      stop() {
        schedulerOn = false;
        scheduler.stop();
      },
      nextRuns: () => scheduler.nextRuns(loaded.agents),
    },
    onRunEvent: (listener) => events.on(listener),
    namespaceOf: agentNamespaceOf((runId) => store.agentOf(runId)),
    runContext(runId) {
      const run = active.get(runId);
      return run ? { agent: run.agent, skills: run.skills } : undefined;
    },
    async close() {
      schedulerOn = false;
      scheduler.stop();
      leases.stop();
      const pending = [...active.values()];
      for (const run of pending) run.controller.abort();
      await Promise.allSettled(pending.map((r) => r.done));
    },
  };
}
