import type { RunLimits } from '../config/agents-schema.js';
import type { PolicyConfig } from '../config/schema.js';
import type { Sandbox } from '../policy/types.js';
import type { AgentRun, Delivery, RunStatus, RunTrigger } from '../store/agent-runs.js';
import type { Tool } from '../tools/tool.js';

export type { AgentRun, Delivery, RunStatus, RunTrigger };

/** One skill from `.paddock/skills/<name>/SKILL.md` (Agent Skills format). */
export interface SkillDefinition {
  name: string;
  description: string;
  /** Tools the skill expects (`allowed-tools`); a hint, never a grant. */
  allowedTools: string[];
  license?: string;
  compatibility?: string;
  metadata: Record<string, string>;
  /** The markdown body: joins the agent's instructions. */
  instructions: string;
  /** Absolute host directory of the skill (SKILL.md and the files beside it). */
  dir: string;
  file: string;
  /** Paths of the files beside SKILL.md, relative to `dir` (at most 200 listed). */
  files: string[];
}

/** One `schedules` entry. */
export interface ScheduleDefinition {
  cron: string;
  timezone?: string;
  /** Input text of the runs this schedule starts. */
  input?: string;
  /** Stable key of the entry (its position, expression and time zone): the scheduler's state is kept per key. */
  key: string;
}

/** A loaded, validated agent. */
export interface AgentDefinition {
  name: string;
  description: string;
  /** The markdown body: the task. */
  instructions: string;
  file: string;
  dir: string;
  provider: string;
  model: string;
  mcpServers: string[];
  /** Allow-list of tool names or globs; `undefined` = the built-ins plus the named servers' tools. */
  tools?: string[];
  disallowedTools: string[];
  skills: SkillDefinition[];
  schedules: ScheduleDefinition[];
  notify: string[];
  limits: RunLimits;
  /** Catch-up after downtime for this agent; the global default when absent. */
  catchUp?: boolean;
  /** The named computer the agent's runs share; absent: each run gets a private one. */
  computer?: string;
  /** The agent's `policy` block, merged over the global policy (see narrowPolicyConfig). */
  policyConfig?: PolicyConfig;
  /** The policy the agent's calls see: the global one AND the agent's own. */
  sandbox: Sandbox;
  /** The agent's tool filter (allow-list, disallowed tools, named servers). */
  allowTool: (name: string, tool: Tool) => boolean;
  /** Problems that do not stop the agent (e.g. a policy entry wider than the global one). */
  warnings: string[];
  /** AGENT.md `approvals.wait`: how long one `ask` call may wait for a person; absent = refused. */
  approvalWaitMs?: number;
}

/** An agent directory that could not be loaded: the other agents are unaffected. */
export interface AgentLoadError {
  /** The directory name under `.paddock/agents/`. */
  agent: string;
  file: string;
  /** One `key: message` line per problem, each saying what to do. */
  problems: string[];
}

/** Budgets and settings a run resolves from the agent and the global section. */
export type { RunLimits };
