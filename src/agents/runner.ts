import { MAX_NOTIFY_MESSAGE_BYTES, type Notifier } from '../net/notifier.js';
import type { Sandbox } from '../policy/types.js';
import { PaddockError, toPaddockError } from '../shared/errors.js';
import type { Logger } from '../shared/logger.js';
import { truncateUtf8 } from '../shared/text.js';
import type { AgentRunStore, RunEnd } from '../store/agent-runs.js';
import type { Gateway } from '../tools/gateway.js';
import type { ToolRegistry } from '../tools/registry.js';
import type { CallerContext } from '../tools/tool.js';
import type { RunEvents } from './events.js';
import { firstMessage, systemPrompt } from './prompt.js';
import type { ModelMessage, ModelProvider, ModelToolResult, ModelToolSpec } from './providers/types.js';
import { refusalReason } from './tool-filter.js';
import { outcomeText } from './tool-text.js';
import type { AgentDefinition, AgentRun, Delivery, RunTrigger } from './types.js';

/**
 * A caller context with the agent's own policy. The gateway uses `policy` instead of its global
 * one when present (`policy: caller.policy ?? this.deps.policy`); the agent's sandbox already
 * is the AND of the global policy and the agent's, so it can only narrow.
 */
export type AgentCallerContext = CallerContext & { policy?: Sandbox };

/** The services a run uses. */
export interface RunnerDeps {
  gateway: Gateway;
  registry: ToolRegistry;
  store: AgentRunStore;
  notifier: Notifier;
  events: RunEvents;
  logger: Logger;
  toolResultMaxBytes: number;
  /** Waits (bounded) for upstream servers to list their tools; resolves at once when none is pending. */
  awaitServers?: (servers: readonly string[], signal: AbortSignal) => Promise<void>;
  skillsGuestRoot?: string | undefined;
  /** A link to an approval in the dock, for the notify channels of a run that waits. */
  approvalLink?: ((approvalId: string) => string | undefined) | undefined;
}

/** One run to execute. */
export interface RunSpec {
  runId: string;
  trigger: RunTrigger;
  input?: string | undefined;
  scheduledAt?: number | undefined;
  /** The server running it and its first lease expiry (see `RunLeases`). */
  owner?: string | undefined;
  leaseExpiresAt?: number | undefined;
  /** Cancels the run (status `cancelled`). */
  signal?: AbortSignal | undefined;
  /** Builds the provider at run start; a throw (e.g. a missing key) fails the run with its message. */
  provider: () => ModelProvider;
}

type Stop = { kind: 'wall' } | { kind: 'cancel' };

/**
 * Executes one run of an agent: a ReAct loop over the gateway. The model sees the agent's tools
 * (gateway.listTools with the agent's filter: names, descriptions, schemas — never where a tool
 * comes from); each call runs through gateway.call as `agent:<run>` (via `agent`, or `schedule`
 * for scheduled runs), unattended, with the run as parent and the agent's policy; results or
 * error bodies go back to the model until it answers without a tool call or a budget runs out
 * (turns, tokens, wall time → `limit`). The final answer is sent to the agent's notify channels.
 * Never throws: every outcome is the returned run record.
 */
export async function executeRun(agent: AgentDefinition, spec: RunSpec, deps: RunnerDeps): Promise<AgentRun> {
  const startedAt = Date.now();
  const deadline = startedAt + agent.limits.wallTimeMs;
  const controller = new AbortController();
  let stop: Stop | undefined;
  const wall = setTimeout(() => {
    stop ??= { kind: 'wall' };
    controller.abort(new PaddockError('LIMIT_EXCEEDED', 'wall time'));
  }, agent.limits.wallTimeMs);
  const onCancel = () => {
    stop ??= { kind: 'cancel' };
    controller.abort(new PaddockError('TIMEOUT', 'cancelled'));
  };
  if (spec.signal?.aborted) onCancel();
  else spec.signal?.addEventListener('abort', onCancel, { once: true });

  const logger = deps.logger.child({ agent: agent.name, runId: spec.runId });
  const run = await deps.store.start(
    {
      id: spec.runId,
      agent: agent.name,
      trigger: spec.trigger,
      input: spec.input,
      provider: agent.provider,
      model: agent.model,
      scheduledAt: spec.scheduledAt,
      skills: agent.skills.map((s) => ({ name: s.name, dir: s.dir })),
      owner: spec.owner,
      leaseExpiresAt: spec.leaseExpiresAt,
    },
    startedAt,
  );
  logger.info('agent.run_started', { trigger: spec.trigger });
  // the run's span: the root of its trace, parent of its tool calls (their parentId is the run)
  const span = deps.gateway.tracer.start(`invoke_agent ${agent.name}`, {
    key: spec.runId,
    attributes: {
      'gen_ai.operation.name': 'invoke_agent',
      'gen_ai.agent.name': agent.name,
      'gen_ai.agent.id': spec.runId,
      'gen_ai.request.model': agent.model,
      'paddock.trigger': spec.trigger,
    },
  });
  deps.events.emit({ type: 'run.started', run });

  const usage = { turns: 0, inputTokens: 0, outputTokens: 0 };
  let end: RunEnd;
  try {
    end = await loop(agent, spec, deps, { controller, deadline, usage, logger });
  } catch (e) {
    end = failure(e, stop, agent, usage, logger);
  } finally {
    clearTimeout(wall);
    spec.signal?.removeEventListener('abort', onCancel);
  }
  if (end.status === 'succeeded' && end.finalAnswer && agent.notify.length > 0) {
    end.deliveries = await deliver(agent, spec.runId, spec.trigger, end.finalAnswer, deps, logger);
  }
  await deps.store.progress(spec.runId, usage.turns, usage.inputTokens, usage.outputTokens);
  await deps.store.finish(spec.runId, end);
  const finished = (await deps.store.get(spec.runId))!;
  logger.info('agent.run_finished', {
    status: finished.status,
    turns: finished.turns,
    tokens: finished.inputTokens + finished.outputTokens,
    ...(finished.error ? { error: finished.error } : {}),
  });
  span.setAttributes({
    'gen_ai.usage.input_tokens': finished.inputTokens,
    'gen_ai.usage.output_tokens': finished.outputTokens,
    'paddock.run.status': finished.status,
  });
  span.end({ errorType: finished.status === 'succeeded' ? null : (finished.errorCode ?? finished.status) });
  deps.events.emit({ type: 'run.finished', run: finished });
  return finished;
}

interface LoopState {
  controller: AbortController;
  deadline: number;
  usage: { turns: number; inputTokens: number; outputTokens: number };
  logger: Logger;
}

async function loop(
  agent: AgentDefinition,
  spec: RunSpec,
  deps: RunnerDeps,
  state: LoopState,
): Promise<RunEnd> {
  const { controller, usage } = state;
  const provider = spec.provider();
  const caller: AgentCallerContext = {
    caller: `agent:${spec.runId}`,
    principal: { kind: 'agent', name: agent.name },
    via: spec.trigger === 'schedule' || spec.trigger === 'catch-up' ? 'schedule' : 'agent',
    parentId: spec.runId,
    runId: spec.runId,
    attended: false,
    deadline: state.deadline,
    signal: controller.signal,
    allowTool: agent.allowTool,
    policy: agent.sandbox,
    // a run acts on the agent's named computer, else on a private one of its own (agent:<run>)
    ...(agent.computer ? { computer: { kind: 'named' as const, name: agent.computer } } : {}),
    approvals: {
      agent: agent.name,
      ...(agent.approvalWaitMs === undefined ? {} : { waitMs: agent.approvalWaitMs }),
      onWaiting: (approval) => waiting(agent, spec, deps, approval, state.logger),
    },
  };
  if (agent.mcpServers.length > 0 && deps.awaitServers)
    await deps.awaitServers(agent.mcpServers, controller.signal);
  const system = systemPrompt(agent, {
    trigger: spec.trigger,
    now: new Date(),
    skillsGuestRoot: deps.skillsGuestRoot,
  });
  const messages: ModelMessage[] = [{ role: 'user', text: firstMessage(spec.input) }];

  while (usage.turns < agent.limits.maxTurns) {
    const tools: ModelToolSpec[] = deps.gateway
      .listTools(caller)
      .sort((a, b) => a.name.localeCompare(b.name))
      .map((t) => ({ name: t.name, description: t.description, inputSchema: t.inputSchema }));
    const response = await provider.complete({ system, messages, tools, signal: controller.signal });
    usage.turns++;
    usage.inputTokens += response.usage.inputTokens;
    usage.outputTokens += response.usage.outputTokens;
    await deps.store.progress(spec.runId, usage.turns, usage.inputTokens, usage.outputTokens);
    deps.events.emit({
      type: 'run.turn',
      runId: spec.runId,
      agent: agent.name,
      turn: usage.turns,
      ...response.usage,
    });
    messages.push({ role: 'assistant', text: response.text, toolCalls: response.toolCalls });

    if (response.toolCalls.length === 0) {
      if (!response.text.trim()) {
        return {
          status: 'failed',
          error: `The model ended its turn without an answer or a tool call (stop reason "${response.stopReason}"). Retry the run; if it repeats, check the model and its output token limit.`,
          errorCode: 'UPSTREAM_ERROR',
        };
      }
      return { status: 'succeeded', finalAnswer: response.text };
    }
    const used = usage.inputTokens + usage.outputTokens;
    if (used > agent.limits.maxTokens) {
      return {
        status: 'limit',
        error: `The run used ${used} tokens, over its budget of ${agent.limits.maxTokens}, before a final answer. Raise limits.maxTokens in AGENT.md or make the task smaller.`,
        errorCode: 'LIMIT_EXCEEDED',
      };
    }

    const results: ModelToolResult[] = [];
    for (const call of response.toolCalls) {
      if (controller.signal.aborted) throw controller.signal.reason;
      const outcome = await deps.gateway.call(call.name, call.input, caller);
      let { text, isError } = outcomeText(outcome, deps.toolResultMaxBytes);
      if (!outcome.ok && outcome.error.code === 'NOT_FOUND' && outcome.protocol) {
        const why = refusalReason(agent, call.name, deps.registry.get(call.name));
        if (why) {
          text = JSON.stringify({
            code: 'NOT_FOUND',
            message: `You cannot use "${call.name}": ${why}. Use only the tools listed to you.`,
          });
          state.logger.info('agent.tool_refused', { tool: call.name, reason: why });
        }
      }
      results.push({ callId: call.id, name: call.name, text, isError });
      deps.events.emit({
        type: 'run.tool_call',
        runId: spec.runId,
        agent: agent.name,
        tool: call.name,
        invocationId: outcome.invocationId,
        ok: outcome.ok && !isError,
        ...(outcome.ok ? {} : { errorCode: outcome.error.code }),
      });
    }
    if (controller.signal.aborted) throw controller.signal.reason;
    messages.push({ role: 'tool', results });
  }
  return {
    status: 'limit',
    error: `The run reached its limit of ${agent.limits.maxTurns} turns before a final answer. Raise limits.maxTurns in AGENT.md or make the task smaller.`,
    errorCode: 'LIMIT_EXCEEDED',
  };
}

/**
 * The run waits for a person (or no more): the run row names the approval (the run shows
 * `waiting for approval`), the dock hears of it, and the agent's notify channels get the
 * request with a link to the dock.
 */
async function waiting(
  agent: AgentDefinition,
  spec: RunSpec,
  deps: RunnerDeps,
  approval: { id: string; tool: string } | null,
  logger: Logger,
): Promise<void> {
  await deps.store.setWaiting(spec.runId, approval?.id ?? null);
  deps.events.emit({
    type: 'run.waiting',
    runId: spec.runId,
    agent: agent.name,
    approvalId: approval?.id ?? null,
    ...(approval ? { tool: approval.tool } : {}),
  });
  if (!approval) return;
  logger.info('agent.waiting_for_approval', { approvalId: approval.id, tool: approval.tool });
  const link = deps.approvalLink?.(approval.id);
  for (const channel of agent.notify) {
    deps.notifier
      .send(
        channel,
        {
          title: `${agent.name}: approval needed for ${approval.tool}`,
          message: `Run ${spec.runId} of agent ${agent.name} waits for a person to approve a call to ${approval.tool} (approval ${approval.id}).${link ? ` Decide in the dock: ${link}` : ' Decide in the dock or with `paddock approvals`.'}`,
          data: {
            agent: agent.name,
            runId: spec.runId,
            approvalId: approval.id,
            tool: approval.tool,
            ...(link ? { link } : {}),
          },
        },
        { policy: agent.sandbox, deadline: Date.now() + 30_000, logger },
      )
      .catch((e: unknown) => {
        const error = toPaddockError(e);
        logger.warn('agent.approval_notice_failed', { channel, code: error.code, error: error.message });
      });
  }
}

function failure(
  e: unknown,
  stop: Stop | undefined,
  agent: AgentDefinition,
  usage: { turns: number },
  logger: Logger,
): RunEnd {
  if (stop?.kind === 'wall') {
    return {
      status: 'limit',
      error: `The run reached its wall time of ${agent.limits.wallTimeMs} ms after ${usage.turns} turn(s) without a final answer. Raise limits.wallTimeMs in AGENT.md or make the task smaller.`,
      errorCode: 'LIMIT_EXCEEDED',
    };
  }
  if (stop?.kind === 'cancel')
    return { status: 'cancelled', error: 'The run was cancelled.', errorCode: 'TIMEOUT' };
  const error = toPaddockError(e);
  if (error.code === 'INTERNAL')
    logger.error('agent.run_crashed', { error: (e as Error)?.stack ?? String(e) });
  return { status: 'failed', error: error.message, errorCode: error.code };
}

async function deliver(
  agent: AgentDefinition,
  runId: string,
  trigger: RunTrigger,
  answer: string,
  deps: RunnerDeps,
  logger: Logger,
): Promise<Delivery[]> {
  const deliveries: Delivery[] = [];
  const message = truncateUtf8(answer, MAX_NOTIFY_MESSAGE_BYTES);
  for (const channel of agent.notify) {
    try {
      const receipt = await deps.notifier.send(
        channel,
        { title: `${agent.name}: final answer`, message, data: { agent: agent.name, runId, trigger } },
        { policy: agent.sandbox, deadline: Date.now() + 30_000, logger },
      );
      deliveries.push({ channel, ok: true, sentAt: receipt.sentAt });
    } catch (e) {
      const error = toPaddockError(e);
      logger.warn('agent.delivery_failed', { channel, code: error.code, error: error.message });
      deliveries.push({ channel, ok: false, error: `${error.code}: ${error.message}` });
    }
  }
  return deliveries;
}
