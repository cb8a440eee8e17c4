import type { AuditStore } from '../audit/types.js';
import type { Sandbox } from '../policy/types.js';
import { PaddockError, toPaddockError } from '../shared/errors.js';
import { timeOrderedId } from '../shared/ids.js';
import type { Logger } from '../shared/logger.js';
import { principalKey } from '../shared/principal.js';
import { endApprovalSpan, startCallSpan } from '../telemetry/attributes.js';
import { NOOP_TRACER, type Tracer } from '../telemetry/types.js';
import type { ApprovalGate } from './approval-gate.js';
import type { PermissionPolicy } from './permissions.js';
import { policyVerdict, refusedBeforeApproval } from './policy-preview.js';
import type { ToolRegistry } from './registry.js';
import type { CallerContext, Permission, Tool, ToolContext, ToolResult } from './tool.js';
import type { InputValidator } from './validation.js';

/** Everything the gateway needs; built once by the composition root. */
export interface GatewayDeps {
  registry: ToolRegistry;
  audit: AuditStore;
  policy: Sandbox;
  permissions: PermissionPolicy;
  validator: InputValidator;
  logger: Logger;
  /** Upper bound of a call without a caller deadline. */
  defaultTimeoutMs?: number;
  /**
   * Tools that arrive after the start (upstream servers): `settled` resolves once every
   * configured source has listed once; `discover` starts the source a missing tool name
   * belongs to and waits, until `deadline`, for its listing.
   */
  late?: {
    settled(): Promise<void>;
    discover(name: string, deadline: number): Promise<void>;
    /** TOOL_QUARANTINED when `name` is an upstream tool held for a person's review. */
    quarantined?(name: string): Promise<PaddockError | undefined>;
  };
  /** Decides `ask` calls (who waits, the approval record); without it attended callers run them as before. */
  approvals?: ApprovalGate;
  /** Longest wait of the first listing for {@link late} sources (default 10 s; main passes the slowest server's start timeout). */
  firstListingWaitMs?: number;
  /** Spans of calls (off by default). */
  tracer?: Tracer;
}

/**
 * The outcome of one call. A `protocol` error (an unknown tool) is a JSON-RPC error for MCP
 * clients; the others, invalid arguments included, are tool errors (`isError: true`) that a
 * model reads and corrects.
 */
export type CallOutcome =
  | {
      ok: true;
      invocationId: string;
      result: ToolResult;
      /** The JSON text of `result.structured`, when the gateway made it (renderers reuse it). */
      structuredJson?: string;
    }
  | { ok: false; invocationId: string; error: PaddockError; protocol: boolean };

const DEFAULT_TIMEOUT_MS = 330_000;
/** How long the first listing waits for upstream servers to list their tools. */
const FIRST_LISTING_WAIT_MS = 10_000;
/** How long a tool may take to settle by itself after its deadline or cancellation. */
const ABORT_GRACE_MS = 100;
/** How often a long call reports progress to a caller that asked for it. */
const PROGRESS_INTERVAL_MS = 1000;

/**
 * The one pipeline every call passes, whoever makes it:
 * lookup → permission → input validation → approval (`ask` tools; after validation, so nobody is
 * asked to approve a call that cannot run) → execute (tools call policy first, bounded by
 * the deadline) → audit row. The row is committed before the outcome is returned.
 */
export class Gateway {
  private readonly defaultTimeoutMs: number;
  /** Where every call's span goes (the channel and the agent runner add theirs). */
  readonly tracer: Tracer;

  constructor(private readonly deps: GatewayDeps) {
    this.defaultTimeoutMs = deps.defaultTimeoutMs ?? DEFAULT_TIMEOUT_MS;
    this.tracer = deps.tracer ?? NOOP_TRACER;
  }

  /** The permission of a tool (for listings and the tool channel). */
  permissionOf(tool: Tool): Permission {
    return this.deps.permissions.resolve(tool).permission;
  }

  /**
   * Resolves once late sources (upstream servers) have listed their tools once, or after the
   * bounded first-listing wait: a client that lists once at its start still sees them.
   */
  async ready(): Promise<void> {
    if (!this.deps.late) return;
    const waitMs = this.deps.firstListingWaitMs ?? FIRST_LISTING_WAIT_MS;
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      this.deps.late.settled().catch(() => undefined),
      new Promise<void>((resolve) => {
        timer = setTimeout(resolve, waitMs);
      }),
    ]);
    clearTimeout(timer);
  }

  /** Tools this caller may see: allowed by its filter, not `deny`, and not `ask` when nobody can approve. */
  listTools(caller: CallerContext): Tool[] {
    return this.deps.registry.list((tool) => this.visible(tool, caller));
  }

  private visible(tool: Tool, caller: CallerContext): boolean {
    if (caller.allowTool && !caller.allowTool(tool.name, tool)) return false;
    const permission = this.permissionOf(tool);
    return permission === 'auto' || (permission === 'ask' && this.canApprove(tool, caller));
  }

  /** Someone can approve this caller's `ask` call: a person is attending, may be waited for, or a rule stands. */
  private canApprove(tool: Tool, caller: CallerContext): boolean {
    if (caller.attended) return true;
    const gate = this.deps.approvals;
    return gate !== undefined && (caller.approvals?.waitMs !== undefined || gate.preapproved(tool, caller));
  }

  /** Runs one call through the pipeline. Never throws; every outcome has an audit row. */
  async call(name: string, input: unknown, caller: CallerContext): Promise<CallOutcome> {
    const invocationId = timeOrderedId('inv');
    const startedAt = Date.now();
    const started = performance.now();
    const span = startCallSpan(this.tracer, name, invocationId, caller, input);
    let tool = this.deps.registry.get(name);
    if (!tool && this.deps.late) {
      // a configured server that has not listed yet (cold start): start it within the deadline
      const deadline = Math.min(
        caller.deadline ?? Number.POSITIVE_INFINITY,
        Date.now() + this.defaultTimeoutMs,
      );
      await this.deps.late.discover(name, deadline).catch(() => undefined);
      tool = this.deps.registry.get(name);
    }
    const quarantine = tool ? undefined : await this.deps.late?.quarantined?.(name).catch(() => undefined);
    if (!tool && !quarantine) tool = this.deps.registry.get(name);
    const lineage: {
      generation?: number;
      jobId?: string;
      policyRule?: string;
      approvalId?: string;
      approver?: string | null;
    } = {};
    if (caller.jobId) lineage.jobId = caller.jobId;

    // set once the call's `running` row is written (just before execute)
    let begun = false;
    const finish = async (outcome: CallOutcome): Promise<CallOutcome> => {
      const error = outcome.ok ? undefined : outcome.error;
      if (outcome.ok) outcome.structuredJson = structuredJson(outcome.result);
      const end = {
        durationMs: performance.now() - started,
        outputBytes: outcome.ok ? byteLength(outcome.result, outcome.structuredJson) : 0,
        success: outcome.ok && !outcome.result.isError,
        errorCode: error?.code ?? (outcome.ok && outcome.result.isError ? 'UPSTREAM_ERROR' : null),
        errorMessage: error?.message ?? null,
        policyRule: lineage.policyRule ?? (error?.details.rule as string | undefined) ?? null,
        generation: lineage.generation ?? null,
        jobId: lineage.jobId ?? null,
      };
      try {
        if (begun) await this.deps.audit.complete(invocationId, end);
        else await this.deps.audit.record({ ...start(), ...end });
      } catch (e) {
        this.deps.logger.error('audit.failed', { tool: name, invocationId, error: (e as Error).message });
        span.end({ errorType: 'INTERNAL', message: 'the audit row could not be written' });
        return unrecorded(invocationId);
      }
      if (error) {
        this.deps.logger.info('tool.failed', { tool: name, caller: caller.caller, code: error.code });
      }
      span.end({ errorType: end.errorCode, message: error?.message ?? null });
      return outcome;
    };
    const start = () => ({
      id: invocationId,
      startedAt,
      tool: name,
      source: tool?.source ?? 'unknown',
      caller: caller.caller,
      principal: principalKey(caller.principal),
      via: caller.via,
      parentId: caller.parentId ?? null,
      generation: lineage.generation ?? null,
      jobId: lineage.jobId ?? null,
      input,
      approvalId: lineage.approvalId ?? null,
      approver: lineage.approver ?? null,
    });

    if (quarantine) return finish({ ok: false, invocationId, protocol: false, error: quarantine });
    if (!tool || (caller.allowTool && !caller.allowTool(name, tool))) {
      return finish({
        ok: false,
        invocationId,
        protocol: true,
        error: new PaddockError(
          'NOT_FOUND',
          `Unknown tool "${name}". List the available tools and use one of their names.`,
        ),
      });
    }

    const { permission, rule } = this.deps.permissions.resolve(tool);
    if (permission === 'deny') {
      return finish({
        ok: false,
        invocationId,
        protocol: false,
        error: new PaddockError(
          'POLICY_DENIED',
          `Tool "${name}" is denied by ${rule}; ask an operator to change its permission.`,
          {
            rule,
          },
        ),
      });
    }
    if (permission === 'ask' && !this.canApprove(tool, caller)) {
      return finish({
        ok: false,
        invocationId,
        protocol: false,
        error: new PaddockError(
          'PERMISSION_REQUIRED',
          `Tool "${name}" needs a person's approval (${rule}) and nobody can approve it here; call it directly from an attended session, or set its permission to auto.`,
          { rule },
        ),
      });
    }

    try {
      this.deps.validator.validate(tool.inputSchema, input ?? {}, name);
    } catch (e) {
      return finish({ ok: false, invocationId, protocol: false, error: toPaddockError(e) });
    }
    const deadline = Math.min(
      caller.deadline ?? Number.POSITIVE_INFINITY,
      Date.now() + this.defaultTimeoutMs,
    );
    // policy before approval: a call the policy refuses is refused before anyone is asked
    const verdict =
      permission === 'ask' ? policyVerdict(tool, input, caller.policy ?? this.deps.policy) : null;
    if (verdict && !verdict.allow) {
      lineage.policyRule = verdict.rule;
      return finish({ ok: false, invocationId, protocol: false, error: refusedBeforeApproval(verdict) });
    }
    if (permission === 'ask' && this.deps.approvals) {
      const wait = span.child('approval wait', { attributes: { 'gen_ai.tool.name': name } });
      const admission = await this.deps.approvals.admit({
        tool,
        input,
        caller,
        invocationId,
        rule,
        deadline,
      });
      endApprovalSpan(wait, admission);
      if (admission.approvalId !== undefined) lineage.approvalId = admission.approvalId;
      if (admission.approver !== undefined) lineage.approver = admission.approver;
      if (!admission.run) return finish({ ok: false, invocationId, protocol: false, error: admission.error });
      if (admission.policyRule) lineage.policyRule = admission.policyRule;
    }
    // the row exists before the first effect, so a crash mid-call leaves it `running`
    try {
      await this.deps.audit.begin(start());
      begun = true;
    } catch (e) {
      this.deps.logger.error('audit.failed', { tool: name, invocationId, error: (e as Error).message });
      return unrecorded(invocationId);
    }

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

    // MCP progress for long calls: a heartbeat every second until the tool reports its own
    let ownProgress = false;
    const startedMs = Date.now();
    const heartbeat = caller.onProgress
      ? setInterval(() => {
          if (!ownProgress)
            caller.onProgress?.({
              progress: Math.round((Date.now() - startedMs) / 1000),
              message: `${name} is still running`,
            });
        }, PROGRESS_INTERVAL_MS)
      : undefined;
    const ctx: ToolContext = {
      invocationId,
      caller,
      signal: controller.signal,
      deadline,
      policy: caller.policy ?? this.deps.policy,
      logger: this.deps.logger.child({ tool: name, invocationId }),
      notePolicyRule: (r) => {
        lineage.policyRule = r;
      },
      noteComputer: (info) => {
        if (info.generation !== undefined) lineage.generation = info.generation;
        if (info.jobId !== undefined) lineage.jobId = info.jobId;
      },
      progress: (p) => {
        ownProgress = true;
        caller.onProgress?.(p);
      },
      span,
    };

    try {
      const result = await raceAbort(
        tool.execute((input ?? {}) as Record<string, unknown>, ctx),
        controller.signal,
      );
      return finish({ ok: true, invocationId, result });
    } catch (e) {
      const error = toPaddockError(e);
      if (error.code === 'INTERNAL') {
        this.deps.logger.error('tool.crashed', {
          tool: name,
          invocationId,
          error: (e as Error)?.stack ?? String(e),
        });
      }
      return finish({ ok: false, invocationId, protocol: false, error });
    } finally {
      clearInterval(heartbeat);
      clearTimeout(timer);
      caller.signal?.removeEventListener('abort', onCallerAbort);
    }
  }
}

/** The outcome when the audit log cannot take a row: nothing runs or is returned unrecorded. */
function unrecorded(invocationId: string): CallOutcome {
  return {
    ok: false,
    invocationId,
    protocol: false,
    error: new PaddockError(
      'INTERNAL',
      'The call could not be recorded in the audit log, so it was not run or its result is withheld. Check the data directory (disk full or read-only?) and retry.',
    ),
  };
}

/**
 * Settles with the tool's own outcome, or with the abort reason. After an abort the tool gets
 * a short grace period to settle by itself, so a tool that honours its signal reports its own,
 * more precise error (e.g. an upstream server that never answered is UPSTREAM_ERROR).
 */
function raceAbort<T>(promise: Promise<T>, signal: AbortSignal, graceMs = ABORT_GRACE_MS): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    let timer: NodeJS.Timeout | undefined;
    const onAbort = () => {
      timer = setTimeout(() => reject(signal.reason), graceMs);
    };
    if (signal.aborted) onAbort();
    else signal.addEventListener('abort', onAbort, { once: true });
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener('abort', onAbort);
    };
    promise.then(
      (v) => {
        done();
        resolve(v);
      },
      (e) => {
        done();
        reject(e);
      },
    );
  });
}

/**
 * The JSON text of the structured content of a result that has no content blocks (renderers
 * send it as the text), or undefined.
 */
function structuredJson(result: ToolResult): string | undefined {
  if (result.structured === undefined || result.content !== undefined) return undefined;
  try {
    return JSON.stringify(result.structured);
  } catch {
    return undefined;
  }
}

/** Bytes of the result's JSON; a result of structured content only is measured from its text. */
function byteLength(result: ToolResult, structured: string | undefined): number {
  const keys = Object.keys(result);
  if (structured !== undefined && keys.length === 1 && keys[0] === 'structured') {
    return Buffer.byteLength(structured) + '{"structured":}'.length;
  }
  try {
    return Buffer.byteLength(JSON.stringify(result));
  } catch {
    return 0;
  }
}
