/**
 * The dock's view of the AgentsService: JSON-ready definitions and runs, change notifications
 * from its run events, and runs started with trigger `api`. A run started here is the same as
 * one started by `paddock agents run`: its calls go through the gateway as the run's caller.
 */
import type { AgentsService } from '../../agents/service.js';
import type { AgentSummary } from '../../agents/summary.js';
import type { AgentRun } from '../../agents/types.js';
import type { DockAgent, DockAgentLoadError, DockAgentRun } from './protocol.js';
import type { AgentsChange, Disposable, DockAgentRunDetails, DockAgents } from './sources.js';
import { toDockAuditRow } from './views.js';

/** Characters of a run's input, answer and error in lists (details carry the stored text). */
export const RUN_TEXT_PREVIEW_CHARS = 2000;
/** Most tool calls sent with one run's details. */
export const MAX_DETAIL_CALLS = 300;
/** Recent runs searched when looking one up by id before falling back to the run store. */
const RECENT_RUNS = 50;

/** What the adapter needs of the agents service. */
export type AgentsServiceView = Pick<
  AgentsService,
  'list' | 'loadErrors' | 'runs' | 'show' | 'start' | 'onRunEvent'
>;

/** A DockAgents over an AgentsService. */
export function dockAgentsFromService(service: AgentsServiceView): DockAgents {
  const run = async (runId: string): Promise<AgentRun | undefined> =>
    (await service.runs({ limit: RECENT_RUNS })).find((r) => r.id === runId) ??
    (await service.show(runId))?.run;
  return {
    list: async () => (await service.list()).map(toDockAgent),
    loadErrors: () =>
      service
        .loadErrors()
        .map((e): DockAgentLoadError => ({ agent: e.agent, file: e.file, problems: [...e.problems] })),
    runs: async (limit) =>
      (await service.runs({ limit })).map((r) => toDockAgentRun(r, RUN_TEXT_PREVIEW_CHARS)),
    async run(runId) {
      const found = await run(runId);
      return found ? toDockAgentRun(found, RUN_TEXT_PREVIEW_CHARS) : undefined;
    },
    async show(runId): Promise<DockAgentRunDetails | undefined> {
      const details = await service.show(runId);
      if (!details) return undefined;
      return {
        run: toDockAgentRun(details.run, Number.POSITIVE_INFINITY),
        calls: details.calls
          .slice(0, MAX_DETAIL_CALLS)
          .map((c) => ({ ...toDockAuditRow(c), depth: c.depth })),
        truncated: details.calls.length > MAX_DETAIL_CALLS,
      };
    },
    async start(name, input) {
      const { runId, done } = await service.start(name, {
        trigger: 'api',
        ...(input !== undefined && input !== '' ? { input } : {}),
      });
      // The run's outcome is in its record and its events; only a database failure rejects.
      done.catch(() => undefined);
      return { runId };
    },
    onChange(listener: (change: AgentsChange) => void): Disposable {
      return service.onRunEvent((event) => {
        switch (event.type) {
          case 'run.started':
          case 'run.finished':
            listener({ kind: 'run', runId: event.run.id });
            listener({ kind: 'agents' });
            return;
          case 'run.turn':
          case 'run.tool_call':
          case 'run.waiting':
            listener({ kind: 'run', runId: event.runId });
            return;
          case 'schedule.tick':
          case 'agents.reloaded':
            listener({ kind: 'agents' });
            return;
        }
      });
    },
  };
}

/**
 * An agent summary as the dock shows it. A run whose record has ended is not shown as running,
 * even while the service is still releasing it (its `run.finished` event comes first).
 */
export function toDockAgent(a: AgentSummary): DockAgent {
  const ended = a.lastRun !== null && a.lastRun.id === a.running && a.lastRun.status !== 'running';
  return {
    name: a.name,
    description: a.description,
    provider: a.provider,
    model: a.model,
    file: a.file,
    tools: a.tools ? [...a.tools] : null,
    mcpServers: [...a.mcpServers],
    skills: [...a.skills],
    notify: [...a.notify],
    schedules: a.schedules.map((s) => ({ cron: s.cron, timezone: s.timezone ?? null, next: s.next })),
    nextRun: a.nextRun,
    running: ended ? null : a.running,
    lastRun: a.lastRun
      ? {
          id: a.lastRun.id,
          status: a.lastRun.status,
          startedAt: a.lastRun.startedAt,
          endedAt: a.lastRun.endedAt,
        }
      : null,
    warnings: [...a.warnings],
  };
}

/** A run record as the dock shows it, its texts cut to `maxChars`. */
export function toDockAgentRun(r: AgentRun, maxChars: number): DockAgentRun {
  return {
    id: r.id,
    agent: r.agent,
    trigger: r.trigger,
    status: r.status,
    startedAt: r.startedAt,
    endedAt: r.endedAt,
    turns: r.turns,
    inputTokens: r.inputTokens,
    outputTokens: r.outputTokens,
    provider: r.provider,
    model: r.model,
    input: cut(r.input, maxChars),
    finalAnswer: cut(r.finalAnswer, maxChars),
    error: cut(r.error, maxChars),
    errorCode: r.errorCode,
    deliveries: r.deliveries.map((d) => ({ channel: d.channel, ok: d.ok, error: d.error ?? null })),
    waitingApproval: r.waitingApproval ?? null,
  };
}

function cut(text: string | null, maxChars: number): string | null {
  if (text === null || text.length <= maxChars) return text;
  return `${text.slice(0, maxChars - 1)}…`;
}
