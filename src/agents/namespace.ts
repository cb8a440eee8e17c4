import type { AgentRunStore } from '../store/agent-runs.js';
import { defaultNamespaceOf, type NamespaceOf } from '../tools/builtin/save-memory.js';

/**
 * A memory namespace resolver that gives every agent its own: a call that belongs to an agent
 * run (`CallerContext.runId`, or a caller or `onBehalfOf` of `agent:<run>`) saves and recalls under
 * `agent:<agent name>`, so all runs of one agent share their memories and no other caller
 * sees them. Other callers get `fallback` (the built-ins' default: the kind of caller).
 */
export function agentNamespaceOf(
  agentOfRun: (runId: string) => Promise<string | undefined> | string | undefined,
  fallback: NamespaceOf = defaultNamespaceOf,
): NamespaceOf {
  return async (caller) => {
    // a tool-channel call carries the run id, or names the agent run it acts for
    const who = (caller as { onBehalfOf?: string }).onBehalfOf ?? caller.caller;
    const runId = caller.runId ?? (who.startsWith('agent:') ? who.slice(6) : undefined);
    const agent = runId ? await agentOfRun(runId) : undefined;
    return agent ? `agent:${agent}` : fallback(caller);
  };
}

/** {@link agentNamespaceOf} over the run store (`agent_runs`). */
export function createAgentNamespaceOf(store: AgentRunStore, fallback?: NamespaceOf): NamespaceOf {
  return agentNamespaceOf((runId) => store.agentOf(runId), fallback);
}
