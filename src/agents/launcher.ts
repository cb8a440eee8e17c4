/**
 * Starting one run of an agent: claim the agent's single run, link the caller's signal, build
 * the provider at run start, execute the run over the gateway and keep it in the table of this
 * process's runs until it ends.
 */
import type { ProviderConfig } from '../config/agents-schema.js';
import { randomId } from '../shared/ids.js';
import type { Logger } from '../shared/logger.js';
import type { ActiveRuns } from './active-runs.js';
import type { RunLeases } from './leases.js';
import { createProvider } from './providers/index.js';
import { executeRun, type RunnerDeps } from './runner.js';
import type { AgentDefinition, AgentRun, RunTrigger } from './types.js';

/** How a run is started. */
export interface RunRequest {
  input?: string;
  trigger?: RunTrigger;
  /** Cancels the run (status `cancelled`). */
  signal?: AbortSignal;
}

/** What a launch uses. */
export interface LauncherDeps {
  runs: ActiveRuns;
  leases: RunLeases;
  providers: ReadonlyMap<string, ProviderConfig>;
  /** Where provider keys are read from (never passed on to tools or the computer). */
  env: NodeJS.ProcessEnv;
  dataDir: string;
  logger: Logger;
  /** The services of the run itself. */
  runner: RunnerDeps;
}

/**
 * Starts a run of `agent` and returns at once with its id and its end (LIMIT_EXCEEDED while the
 * agent runs here or elsewhere).
 */
export async function launchRun(
  deps: LauncherDeps,
  agent: AgentDefinition,
  trigger: RunTrigger,
  request: RunRequest,
  scheduledAt?: number,
): Promise<{ runId: string; done: Promise<AgentRun> }> {
  const { runs, leases, logger } = deps;
  await runs.claim(agent.name);
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
        createProvider(agent.provider, agent.model, deps.providers, {
          env: deps.env,
          dataDir: deps.dataDir,
          onRetry: (info) => logger.warn('agent.provider_retry', { agent: agent.name, runId, ...info }),
        }),
    },
    deps.runner,
  ).finally(() => {
    runs.ended(runId);
    request.signal?.removeEventListener('abort', onAbort);
  });
  runs.started(runId, {
    agent: agent.name,
    skills: agent.skills.map((s) => ({ name: s.name, dir: s.dir })),
    controller,
    done,
  });
  return { runId, done };
}

/**
 * Waits, at most `timeoutMs` (0: not at all), until upstream servers that an agent uses have
 * listed their tools; resolves at once when none of them is still pending.
 */
export async function waitForDiscovery(
  integrations: {
    servers(): { name: string; state: string; registeredTools: number }[];
    discovered(): Promise<void>;
  },
  servers: readonly string[],
  timeoutMs: number,
  signal: AbortSignal,
): Promise<void> {
  const pending = integrations
    .servers()
    .some((s) => servers.includes(s.name) && s.state !== 'disabled' && s.registeredTools === 0);
  if (!pending || timeoutMs === 0) return;
  await new Promise<void>((resolve) => {
    const timer = setTimeout(done, timeoutMs);
    function done() {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    }
    signal.addEventListener('abort', done, { once: true });
    integrations.discovered().then(done, done);
  });
}
