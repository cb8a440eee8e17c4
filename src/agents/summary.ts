import type { RunLimits } from '../config/agents-schema.js';
import type { NextRun } from './scheduler.js';
import type { AgentDefinition, AgentRun } from './types.js';

/** An agent as `paddock agents list` and the dock show it (no functions, JSON-ready). */
export interface AgentSummary {
  name: string;
  description: string;
  file: string;
  provider: string;
  model: string;
  mcpServers: string[];
  /** The allow-list as written; null = the built-ins plus the named servers' tools. */
  tools: string[] | null;
  disallowedTools: string[];
  skills: string[];
  schedules: { cron: string; timezone?: string; input?: string; next: number | null }[];
  /** Earliest next scheduled time (epoch ms), or null without schedules. */
  nextRun: number | null;
  notify: string[];
  limits: RunLimits;
  /** True when the agent's `policy` block narrows the global policy. */
  narrowedPolicy: boolean;
  warnings: string[];
  /** Id of the run going now, if any. */
  running: string | null;
  lastRun: Pick<AgentRun, 'id' | 'status' | 'trigger' | 'startedAt' | 'endedAt'> | null;
}

/** The JSON-ready summary of one agent. */
export function summarize(
  agent: AgentDefinition,
  next: readonly NextRun[],
  running: string | null,
  last: AgentRun | undefined,
): AgentSummary {
  const times = next.map((n) => n.next).filter((n): n is number => n !== null);
  return {
    name: agent.name,
    description: agent.description,
    file: agent.file,
    provider: agent.provider,
    model: agent.model,
    mcpServers: [...agent.mcpServers],
    tools: agent.tools ? [...agent.tools] : null,
    disallowedTools: [...agent.disallowedTools],
    skills: agent.skills.map((s) => s.name),
    schedules: agent.schedules.map((s) => ({
      cron: s.cron,
      ...(s.timezone ? { timezone: s.timezone } : {}),
      ...(s.input !== undefined ? { input: s.input } : {}),
      next: next.find((n) => n.key === s.key)?.next ?? null,
    })),
    nextRun: times.length > 0 ? Math.min(...times) : null,
    notify: [...agent.notify],
    limits: { ...agent.limits },
    narrowedPolicy: agent.policyConfig !== undefined,
    warnings: [...agent.warnings],
    running,
    lastRun: last
      ? {
          id: last.id,
          status: last.status,
          trigger: last.trigger,
          startedAt: last.startedAt,
          endedAt: last.endedAt,
        }
      : null,
  };
}
