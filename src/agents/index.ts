/**
 * Agents as markdown: `.paddock/agents/<name>/AGENT.md` and `.paddock/skills/<name>/SKILL.md`
 * loaders, model providers (OpenAI-compatible and Anthropic over HTTP), the ReAct runner over the
 * gateway, the run store, the scheduler, and the service that ties them together.
 */

export { pidAlive } from '../shared/pid.js';
export {
  type AgentRunStore,
  MAX_CALL_DEPTH,
  type NewRun,
  type RunCall,
  type RunEnd,
  type RunQuery,
} from '../store/agent-runs.js';
export { SqliteAgentRunStore } from '../store/sqlite/run-store.js';
export {
  AGENT_KEYS,
  type AgentFrontmatter,
  type AgentPolicy,
  agentFrontmatterSchema,
  agentPolicySchema,
  SKILL_KEYS,
  skillFrontmatterSchema,
} from './agent-schema.js';
export { type RunEvent, type RunEvents, runEvents } from './events.js';
export { DEFAULT_LEASE_RENEW_MS, DEFAULT_LEASE_TTL_MS, RunLeases } from './leases.js';
export { type AgentLoadContext, agentsDir, type LoadedAgents, loadAgents, skillsDir } from './load-agents.js';
export { agentNamespaceOf, createAgentNamespaceOf } from './namespace.js';
export {
  type AgentSandbox,
  buildAgentSandbox,
  type IntersectOptions,
  intersectSandboxes,
  narrowPolicyConfig,
} from './policy-narrowing.js';
export * from './providers/index.js';
export { type AgentCallerContext, executeRun, type RunnerDeps, type RunSpec } from './runner.js';
export { AgentScheduler, type NextRun, type SchedulerDeps } from './scheduler.js';
export { cronOf, parseSchedules } from './schedules.js';
export {
  type AgentsDeps,
  type AgentsService,
  createAgents,
  type RunDetails,
  type RunRequest,
} from './service.js';
export { listSkillNames, loadSkill, type SkillResult } from './skills.js';
export { type AgentSummary, summarize } from './summary.js';
export { compileToolFilter, isBuiltin, refusalReason, type ToolFilterSpec } from './tool-filter.js';
export type * from './types.js';
