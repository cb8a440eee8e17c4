/**
 * `tools/call` for 2026-era clients, and the tasks extension's methods. The call goes through
 * the gateway exactly as a 2025-era call does; what differs is how a person's answer reaches
 * it. A 2025 client is asked mid-call (elicitation pushed on its session); a 2026 request has
 * no session to push on, so a call that waits for an approval answers `input_required` with the
 * approval form, keeps waiting in the background, and continues when the client retries with
 * the answer. A client that declared the tasks extension gets a task instead for a call that
 * asks a person or is still running after `taskAfterMs`, and polls it.
 */
import {
  createRequestStateCodec,
  type InputResponses,
  inputRequired,
  inputResponse,
  ProtocolError,
  ProtocolErrorCode,
  type RequestStateCodec,
  type Server,
  type ServerContext,
} from '@modelcontextprotocol/server';
import * as z from 'zod';
import { PaddockError } from '../shared/errors.js';
import type { ApprovalAnswer, ApprovalPrompt } from '../tools/approval-gate.js';
import type { CallOutcome, Gateway } from '../tools/gateway.js';
import type { CallerContext } from '../tools/tool.js';
import type { BackgroundCall, BackgroundCalls } from './background-calls.js';
import { APPROVAL_FORM, approvalMessage, approvalNotice } from './elicitation.js';

/** The tasks extension's identifier (capabilities, both ways). */
export const TASKS_EXTENSION = 'io.modelcontextprotocol/tasks';

/** How often a client should poll a task. */
const POLL_INTERVAL_MS = 1000;

/** What the 2026-era handlers share across requests: the background calls and the state key. */
export class ModernServing {
  /** Seals the id of a waiting call into the `requestState` the client echoes back. */
  readonly state: RequestStateCodec<{ call: string }>;

  constructor(
    readonly gateway: Gateway,
    readonly calls: BackgroundCalls,
    /** A call still running after this long continues as a task (tasks-capable clients). */
    readonly taskAfterMs = 2000,
    /** How long a task's result stays available after it ends. */
    readonly taskTtlMs = 10 * 60_000,
  ) {
    this.state = createRequestStateCodec({
      key: crypto.getRandomValues(new Uint8Array(32)),
      ttlSeconds: 24 * 3600,
    });
  }
}

/** What one `tools/call` of a 2026-era request needs. */
export interface ModernCallRequest {
  name: string;
  args: Record<string, unknown>;
  caller: CallerContext;
  /** `principalKey` of the caller. */
  principal: string;
  /** The client declared the tasks extension on this request. */
  tasks: boolean;
}

/**
 * Serves one 2026-era `tools/call`: starts the call (or continues the one the echoed
 * `requestState` names, with the client's answer), and answers its result, an
 * `input_required` for an approval, or a task.
 */
export async function modernToolCall(
  serving: ModernServing,
  request: ModernCallRequest,
  ctx: ServerContext,
  render: (outcome: CallOutcome, tool: string) => Record<string, unknown>,
): Promise<Record<string, unknown>> {
  const { calls } = serving;
  const resumed = ctx.mcpReq.requestState<{ call: string }>();
  // a client that can neither be asked nor poll a task gets its answer in this request, as a
  // 2025 client without elicitation does
  if (!resumed && !request.tasks && !request.caller.approvals?.elicit) {
    // a third party's call can be ended by its revocation; the owner is never revoked
    const tracked =
      request.caller.principal.kind === 'owner'
        ? undefined
        : calls.track(request.principal, ctx.mcpReq.signal);
    try {
      const outcome = await serving.gateway.call(request.name, request.args, {
        ...request.caller,
        signal: tracked?.signal ?? ctx.mcpReq.signal,
      });
      return render(outcome, request.name);
    } finally {
      tracked?.done();
    }
  }
  let call: BackgroundCall;
  if (resumed?.call) {
    const found = calls.get(resumed.call, request.principal);
    if (!found || found.tool !== request.name || found.argsJson !== JSON.stringify(request.args)) {
      return render(
        {
          ok: false,
          invocationId: '',
          protocol: false,
          error: new PaddockError(
            'NOT_FOUND',
            'The call this answer belongs to is over (it ended, expired, or was made with other arguments); call the tool again.',
          ),
        },
        request.name,
      );
    }
    call = found;
    applyAnswer(calls, call, ctx.mcpReq.inputResponses);
  } else {
    call = calls.start(request.name, request.args, request.caller, request.principal);
  }
  const settled = await calls.settle(
    call,
    ctx.mcpReq.signal,
    request.tasks ? serving.taskAfterMs : undefined,
  );
  if (settled.kind === 'done') return render(settled.outcome, request.name);
  if (request.tasks) {
    calls.makeTask(call);
    return { resultType: 'task', ...taskOf(serving, call) };
  }
  if (settled.kind === 'input') {
    calls.keep(call);
    return inputRequired({
      inputRequests: { [settled.key]: inputRequired.elicit(approvalForm(settled.prompt)) },
      requestState: await serving.state.mint({ call: call.id }),
    }) as unknown as Record<string, unknown>;
  }
  // the client left while the call ran: it is cancelled, as a 2025 call is on disconnect
  calls.cancel(call);
  throw new ProtocolError(ProtocolErrorCode.InternalError, 'The request was cancelled.');
}

/** The params of `tasks/get`, `tasks/update` and `tasks/cancel`, and their results (schemas, built once). */
const BY_ID = z.object({ taskId: z.string() }).passthrough();
const ANY_RESULT = z.object({}).passthrough();

/**
 * Installs `tasks/get`, `tasks/update` and `tasks/cancel` on a 2026-era instance; every one
 * finds only the tasks of `principal`.
 */
export function installTaskMethods(
  server: Server,
  serving: ModernServing,
  principal: string,
  render: (outcome: CallOutcome, tool: string) => Record<string, unknown>,
): void {
  const find = (taskId: string): BackgroundCall => {
    const call = serving.calls.get(taskId, principal);
    if (!call?.task)
      throw new ProtocolError(
        ProtocolErrorCode.InvalidParams,
        `No task "${taskId}"; it ended or never existed.`,
      );
    return call;
  };
  server.setRequestHandler('tasks/get', { params: BY_ID, result: ANY_RESULT }, async ({ taskId }) =>
    detailedTask(serving, find(taskId), render),
  );
  server.setRequestHandler(
    'tasks/update',
    { params: BY_ID, result: ANY_RESULT },
    // the SDK lifts `inputResponses` out of the params into the context, as for a retried call
    async ({ taskId }, ctx) => {
      applyAnswer(serving.calls, find(taskId), ctx.mcpReq.inputResponses);
      return {};
    },
  );
  server.setRequestHandler('tasks/cancel', { params: BY_ID, result: ANY_RESULT }, async ({ taskId }) => {
    serving.calls.cancel(find(taskId));
    return {};
  });
}

/** The answer of the client to the question the call waits on, if the responses carry it. */
function applyAnswer(calls: BackgroundCalls, call: BackgroundCall, responses: unknown): void {
  if (call.state.kind !== 'input') return;
  const { key, prompt } = call.state;
  const view = inputResponse(responses as InputResponses | undefined, key);
  if (view.kind !== 'elicit') return;
  calls.answer(call, key, answerOf(view, prompt));
}

/** The approval answer in an elicitation response, read as `elicitApproval` reads a pushed one. */
function answerOf(
  view: { action: 'accept' | 'decline' | 'cancel'; content?: Record<string, unknown> },
  prompt: ApprovalPrompt,
): ApprovalAnswer {
  if (!prompt.decides) return { approve: false, reason: 'informational notice; not a decision' };
  if (view.action !== 'accept')
    return {
      approve: false,
      reason: view.action === 'decline' ? 'declined in the MCP client' : 'dismissed in the MCP client',
    };
  const content = view.content ?? {};
  const reason =
    typeof content.reason === 'string' && content.reason.trim() ? content.reason.trim() : undefined;
  if (content.decision === 'approve') return { approve: true, ...(reason ? { reason } : {}) };
  return { approve: false, reason: reason ?? 'denied in the MCP client' };
}

/** The form a client shows for a waiting approval (a notice when its answer does not decide). */
function approvalForm(prompt: ApprovalPrompt) {
  return prompt.decides
    ? { message: approvalMessage(prompt), requestedSchema: APPROVAL_FORM as never }
    : {
        message: approvalNotice(prompt),
        requestedSchema: { type: 'object' as const, properties: {} },
      };
}

function iso(ms: number): string {
  return new Date(ms).toISOString();
}

/** The task fields of a call (no result). */
function taskOf(serving: ModernServing, call: BackgroundCall): Record<string, unknown> {
  return {
    taskId: call.id,
    status: statusOf(call),
    createdAt: iso(call.createdAt),
    lastUpdatedAt: iso(call.lastUpdatedAt),
    ttlMs: serving.taskTtlMs,
    pollIntervalMs: POLL_INTERVAL_MS,
    ...(call.state.kind === 'input'
      ? { statusMessage: `Waits for approval ${call.state.prompt.approvalId}.` }
      : {}),
  };
}

function statusOf(call: BackgroundCall): string {
  if (call.state.kind === 'done') return call.cancelled ? 'cancelled' : 'completed';
  return call.state.kind === 'input' ? 'input_required' : 'working';
}

/** `tasks/get`: the task with its pending question or its result. */
function detailedTask(
  serving: ModernServing,
  call: BackgroundCall,
  render: (outcome: CallOutcome, tool: string) => Record<string, unknown>,
): Record<string, unknown> {
  const task = taskOf(serving, call);
  if (call.state.kind === 'input')
    return {
      ...task,
      inputRequests: {
        [call.state.key]: {
          method: 'elicitation/create',
          params: { mode: 'form', ...approvalForm(call.state.prompt) },
        },
      },
    };
  if (call.state.kind !== 'done' || call.cancelled) return task;
  const outcome = call.state.outcome;
  if (!outcome.ok && outcome.protocol)
    return {
      ...task,
      status: 'failed',
      error: {
        code: ProtocolErrorCode.InvalidParams,
        message: outcome.error.message,
        data: outcome.error.toJSON(),
      },
    };
  return { ...task, result: render(outcome, call.tool) };
}
