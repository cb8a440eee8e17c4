/**
 * The audit stage of the gateway: one call's row, from its first field to its commit. An acting
 * call gets a `running` row before its first effect (a crash leaves it `running`, marked
 * interrupted at the next start); a call whose tool changes nothing gets its one row when it
 * ends. Either way the row is committed before the outcome is returned.
 */
import type { AuditStore, InvocationEnd, InvocationStart } from '../audit/types.js';
import { PaddockError } from '../shared/errors.js';
import { timeOrderedId } from '../shared/ids.js';
import type { Logger } from '../shared/logger.js';
import { principalKey } from '../shared/principal.js';
import type { Span } from '../telemetry/types.js';
import type { CallerContext, Tool, ToolResult } from './tool.js';

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

/** What a call learned on its way that its row records. */
export interface Lineage {
  generation?: number;
  jobId?: string;
  policyRule?: string;
  approvalId?: string;
  approver?: string | null;
  /** The checkpoint of the computer taken before this approved call ran. */
  checkpointId?: string;
}

/** Sources whose tools Paddock itself declares: their read-only annotation is trusted. */
const DECLARED_HERE = new Set(['builtin', 'computer']);

/**
 * Whether a call of `tool` changes nothing, by its own declaration: a read-only tool of a source
 * Paddock declares or loads in process. An upstream server's annotation is its word only, so its
 * calls are treated as acting.
 */
export function changesNothing(tool: Tool): boolean {
  const trusted = DECLARED_HERE.has(tool.source) || tool.source.startsWith('plugin:');
  return trusted && tool.annotations.readOnlyHint === true;
}

/**
 * Whether a call of `tool` may change the caller's computer: one of the tools Paddock declares
 * for it (the `computer` tool set, `shell` and the file tools of the built-ins included) that is
 * not read-only.
 */
export function actsOnComputer(tool: Tool): boolean {
  return DECLARED_HERE.has(tool.source) && tool.toolsets.includes('computer') && !changesNothing(tool);
}

/** One call as it arrived. */
export interface CallRequest {
  name: string;
  input: unknown;
  caller: CallerContext;
}

/** One call's audit row and span. */
export class CallRecord {
  readonly invocationId = timeOrderedId('inv');
  readonly lineage: Lineage = {};
  readonly span: Span;
  private readonly startedAt = Date.now();
  private readonly started = performance.now();
  private readonly name: string;
  private readonly input: unknown;
  private readonly caller: CallerContext;
  private source = 'unknown';
  private begun = false;

  constructor(
    private readonly audit: AuditStore,
    private readonly logger: Logger,
    request: CallRequest,
    /** The call's span, keyed by its invocation id (children find it by that id). */
    span: (invocationId: string) => Span,
  ) {
    ({ name: this.name, input: this.input, caller: this.caller } = request);
    this.span = span(this.invocationId);
    if (this.caller.jobId) this.lineage.jobId = this.caller.jobId;
  }

  /** The tool the name led to (its source goes into the row). */
  found(tool: Tool): void {
    this.source = tool.source;
  }

  /** A failure before or instead of running; `protocol` for misuse a client should not retry. */
  fail(error: PaddockError, protocol = false): Promise<CallOutcome> {
    return this.finish({ ok: false, invocationId: this.invocationId, protocol, error });
  }

  /**
   * Writes the `running` row before the call acts, unless it changes nothing. False when the row
   * could not be written: then the call must not run.
   */
  async beforeRun(tool: Tool): Promise<boolean> {
    if (changesNothing(tool)) return true;
    try {
      await this.audit.begin(this.row());
      this.begun = true;
      return true;
    } catch (e) {
      this.logger.error('audit.failed', {
        tool: this.name,
        invocationId: this.invocationId,
        error: (e as Error).message,
      });
      return false;
    }
  }

  /** The outcome when the row could not be begun: nothing ran. */
  unrecorded(): CallOutcome {
    return unrecorded(this.invocationId);
  }

  /** Commits the row's end (or the whole row), then hands the outcome back. */
  async finish(outcome: CallOutcome): Promise<CallOutcome> {
    const error = outcome.ok ? undefined : outcome.error;
    if (outcome.ok) outcome.structuredJson = structuredJson(outcome.result);
    const end: InvocationEnd = {
      durationMs: performance.now() - this.started,
      outputBytes: outcome.ok ? byteLength(outcome.result, outcome.structuredJson) : 0,
      success: outcome.ok && !outcome.result.isError,
      errorCode: error?.code ?? (outcome.ok && outcome.result.isError ? 'UPSTREAM_ERROR' : null),
      errorMessage: error?.message ?? null,
      policyRule: this.lineage.policyRule ?? (error?.details.rule as string | undefined) ?? null,
      generation: this.lineage.generation ?? null,
      jobId: this.lineage.jobId ?? null,
    };
    try {
      if (this.begun) await this.audit.complete(this.invocationId, end);
      else await this.audit.record({ ...this.row(), ...end });
    } catch (e) {
      this.logger.error('audit.failed', {
        tool: this.name,
        invocationId: this.invocationId,
        error: (e as Error).message,
      });
      this.span.end({ errorType: 'INTERNAL', message: 'the audit row could not be written' });
      return unrecorded(this.invocationId);
    }
    if (error)
      this.logger.info('tool.failed', { tool: this.name, caller: this.caller.caller, code: error.code });
    this.span.end({ errorType: end.errorCode ?? null, message: error?.message ?? null });
    return outcome;
  }

  private row(): InvocationStart {
    return {
      id: this.invocationId,
      startedAt: this.startedAt,
      tool: this.name,
      source: this.source,
      caller: this.caller.caller,
      principal: principalKey(this.caller.principal),
      via: this.caller.via,
      parentId: this.caller.parentId ?? null,
      generation: this.lineage.generation ?? null,
      jobId: this.lineage.jobId ?? null,
      input: this.input,
      approvalId: this.lineage.approvalId ?? null,
      approver: this.lineage.approver ?? null,
      ...(this.lineage.checkpointId ? { checkpointId: this.lineage.checkpointId } : {}),
    };
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
