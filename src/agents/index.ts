/**
 * Agents as markdown: `.paddock/agents/<name>/AGENT.md` and `.paddock/skills/<name>/SKILL.md`
 * loaders, model providers (OpenAI-compatible and Anthropic over HTTP), the ReAct runner over the
 * gateway, the run store, the scheduler, and the service that ties them together.
 */
export {
  AGENT_KEYS,
  type AgentFrontmatter,
  type AgentPolicy,
  agentFrontmatterSchema,
  agentPolicySchema,
  SKILL_KEYS,
  skillFrontmatterSchema,
} from './agent-schema.js';
export { type RunEvent, RunEvents } from './events.js';
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
export {
  AgentRunStore,
  MAX_CALL_DEPTH,
  type NewRun,
  pidAlive,
  type RunCall,
  type RunEnd,
  type RunQuery,
} from './run-store.js';
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
