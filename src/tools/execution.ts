/**
 * The execution stage of the gateway: the tool runs with a context of its own, bounded by the
 * call's deadline and its caller's cancellation (one signal for both, whose reason says which),
 * and reports progress to a caller that asked for it — a heartbeat each second until the tool
 * reports its own.
 */
import type { Sandbox } from '../policy/types.js';
import { raceAbort } from '../shared/abort.js';
import { PaddockError, toPaddockError } from '../shared/errors.js';
import type { Logger } from '../shared/logger.js';
import type { CallOutcome, CallRecord } from './call-record.js';
import type { CallerContext, Tool, ToolContext } from './tool.js';

/** How long a tool may take to settle by itself after its deadline or cancellation. */
const ABORT_GRACE_MS = 100;
/** How often a long call reports progress to a caller that asked for it. */
const PROGRESS_INTERVAL_MS = 1000;

/** A signal that aborts at `deadline` or when `caller` cancels, with the error that says which. */
function callSignal(
  name: string,
  deadline: number,
  caller: CallerContext,
): { signal: AbortSignal; stop(): void } {
  const controller = new AbortController();
  const timer = setTimeout(
    () =>
      controller.abort(
        new PaddockError(
          'TIMEOUT',
          `Tool "${name}" ran past its deadline; retry with a longer timeout or a smaller request.`,
        ),
      ),
    Math.max(0, deadline - Date.now()),
  );
  const onCallerAbort = () =>
    controller.abort(new PaddockError('TIMEOUT', `The call to "${name}" was cancelled by the caller.`));
  if (caller.signal?.aborted) onCallerAbort();
  else caller.signal?.addEventListener('abort', onCallerAbort, { once: true });
  return {
    signal: controller.signal,
    stop() {
      clearTimeout(timer);
      caller.signal?.removeEventListener('abort', onCallerAbort);
    },
  };
}

/** Runs the admitted `tool`; never throws (a failure is an outcome). */
export async function execute(
  tool: Tool,
  input: unknown,
  caller: CallerContext,
  call: CallRecord,
  deadline: number,
  deps: { policy: Sandbox; logger: Logger },
): Promise<CallOutcome> {
  const { invocationId, lineage } = call;
  const bound = callSignal(tool.name, deadline, caller);
  let ownProgress = false;
  const startedMs = Date.now();
  const heartbeat = caller.onProgress
    ? setInterval(() => {
        if (!ownProgress)
          caller.onProgress?.({
            progress: Math.round((Date.now() - startedMs) / 1000),
            message: `${tool.name} is still running`,
          });
      }, PROGRESS_INTERVAL_MS)
    : undefined;
  const ctx: ToolContext = {
    invocationId,
    caller,
    signal: bound.signal,
    deadline,
    policy: caller.policy ?? deps.policy,
    logger: deps.logger.child({ tool: tool.name, invocationId }),
    notePolicyRule: (rule) => {
      lineage.policyRule = rule;
    },
    noteComputer: (info) => {
      if (info.generation !== undefined) lineage.generation = info.generation;
      if (info.jobId !== undefined) lineage.jobId = info.jobId;
    },
    progress: (p) => {
      ownProgress = true;
      caller.onProgress?.(p);
    },
    span: call.span,
  };
  try {
    const result = await raceAbort(
      tool.execute((input ?? {}) as Record<string, unknown>, ctx),
      bound.signal,
      {
        graceMs: ABORT_GRACE_MS,
      },
    );
    return { ok: true, invocationId, result };
  } catch (e) {
    const error = toPaddockError(e);
    if (error.code === 'INTERNAL') {
      deps.logger.error('tool.crashed', {
        tool: tool.name,
        invocationId,
        error: (e as Error)?.stack ?? String(e),
      });
    }
    return { ok: false, invocationId, protocol: false, error };
  } finally {
    clearInterval(heartbeat);
    bound.stop();
  }
}
