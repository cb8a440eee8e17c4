/**
 * The gateway: the one pipeline every call passes, whoever makes it. Each stage is a function of
 * its own file — lookup.ts, admission.ts, approved-checkpoint.ts (the undo of an approved call),
 * call-record.ts (the audit row), execution.ts — so the pipeline reads as its stages in
 * `Gateway.call`.
 */
import type { AuditStore } from '../audit/types.js';
import type { Sandbox } from '../policy/types.js';
import { raceAbort } from '../shared/abort.js';
import type { Logger } from '../shared/logger.js';
import { startCallSpan } from '../telemetry/attributes.js';
import { NOOP_TRACER, type Tracer } from '../telemetry/types.js';
import { type AdmissionDeps, admit } from './admission.js';
import type { ApprovalGate } from './approval-gate.js';
import { type CheckpointBeforeApproved, checkpointApproved } from './approved-checkpoint.js';
import { type CallOutcome, CallRecord } from './call-record.js';
import { execute } from './execution.js';
import { type LateTools, lookupTool, reachable } from './lookup.js';
import type { PermissionPolicy } from './permissions.js';
import type { ToolRegistry } from './registry.js';
import type { CallerContext, Permission, Tool } from './tool.js';
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
  late?: LateTools;
  /** Decides `ask` calls (who waits, the approval record); without it attended callers run them as before. */
  approvals?: ApprovalGate;
  /** Longest wait of the first listing for {@link late} sources (default 10 s; main passes the slowest server's start timeout). */
  firstListingWaitMs?: number;
  /** Spans of calls (off by default). */
  tracer?: Tracer;
  /**
   * Checkpoints the caller's computer before a call a person approved that may change it (see
   * approved-checkpoint.ts); without it approved calls run without a checkpoint.
   */
  checkpointBeforeApproved?: CheckpointBeforeApproved;
}

export type { CallOutcome } from './call-record.js';

const DEFAULT_TIMEOUT_MS = 330_000;
/** How long the first listing waits for upstream servers to list their tools. */
const FIRST_LISTING_WAIT_MS = 10_000;

/** The pipeline of every call, and what callers may see of the tools. */
export class Gateway {
  private readonly defaultTimeoutMs: number;
  /** Where every call's span goes (the channel and the agent runner add theirs). */
  readonly tracer: Tracer;

  private readonly admission: AdmissionDeps;

  constructor(private readonly deps: GatewayDeps) {
    this.defaultTimeoutMs = deps.defaultTimeoutMs ?? DEFAULT_TIMEOUT_MS;
    this.tracer = deps.tracer ?? NOOP_TRACER;
    this.admission = {
      permissions: deps.permissions,
      validator: deps.validator,
      policy: deps.policy,
      ...(deps.approvals ? { approvals: deps.approvals } : {}),
      canApprove: (tool, caller) => this.canApprove(tool, caller),
    };
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
    await raceAbort(this.deps.late.settled(), AbortSignal.timeout(waitMs)).catch(() => undefined);
  }

  /** Tools this caller may see: allowed by its filter, not `deny`, and not `ask` when nobody can approve. */
  listTools(caller: CallerContext): Tool[] {
    return this.deps.registry.list((tool) => this.visible(tool, caller));
  }

  private visible(tool: Tool, caller: CallerContext): boolean {
    if (!reachable(tool, caller)) return false;
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

  /**
   * Runs one call through the pipeline; never throws, and every outcome has an audit row:
   * lookup → admission (permission, validation, policy, approval) → a checkpoint of the computer
   * before an approved call that may change it → the row before an acting call runs → execution
   * within the deadline → the row's end, committed before the answer.
   */
  async call(name: string, input: unknown, caller: CallerContext): Promise<CallOutcome> {
    const deadline = this.deadlineOf(caller);
    const call = new CallRecord(this.deps.audit, this.deps.logger, { name, input, caller }, (id) =>
      startCallSpan(this.tracer, name, id, caller, input),
    );
    const found = await lookupTool(this.deps, name, caller, deadline);
    if (!found.ok) return call.fail(found.error, found.protocol);
    call.found(found.tool);
    const refused = await admit(this.admission, found.tool, input, caller, call, deadline);
    if (refused) return call.fail(refused);
    const noUndo = await checkpointApproved(this.deps.checkpointBeforeApproved, found.tool, caller, call);
    if (noUndo) return call.fail(noUndo);
    if (!(await call.beforeRun(found.tool))) return call.unrecorded();
    return call.finish(await execute(found.tool, input, caller, call, deadline, this.deps));
  }

  /** The end of a call: the caller's deadline, and never later than the default timeout. */
  private deadlineOf(caller: CallerContext): number {
    return Math.min(caller.deadline ?? Number.POSITIVE_INFINITY, Date.now() + this.defaultTimeoutMs);
  }
}
