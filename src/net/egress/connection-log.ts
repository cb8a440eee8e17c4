/**
 * One audit row per egress connection (a CONNECT tunnel, a SOCKS connection, a plain-HTTP
 * request): caller, parent run_command, job, host, port, rule, bytes each way, duration, and
 * allowed or refused with the reason. Rows go in `tool_invocations` with tool `egress` and
 * source `computer`, the table every other action of a computer lands in, so `paddock audit
 * --tool egress` and the dock's audit view list them beside the job that made them.
 */
import { timeOrderedId } from '../../shared/ids.js';
import type { EgressPrincipal, EgressRefused, EgressSession } from './types.js';

/** The audit tool name of egress rows. */
export const EGRESS_TOOL = 'egress';

/**
 * What a row is: a CONNECT tunnel, a SOCKS connection, one plain-HTTP request, one request
 * inside a terminated tunnel, or a TCP connection to a name the computer's resolver handed out.
 */
export type EgressKind = 'connect' | 'socks' | 'http' | 'https-terminated' | 'tcp';

/**
 * The destination and rule of a refusal the job should read (the policy's, or a name that does
 * not resolve); undefined for the others (limits, malformed requests, unreachable upstreams).
 */
export function refusalOf(
  record: ConnectionRecord,
  decision: { rule: string; code: string; hint?: string | undefined },
): EgressRefused | undefined {
  if (!record.host || decision.hint === undefined) return undefined;
  return { host: record.host, port: record.port, rule: decision.rule, hint: decision.hint };
}

/** What a finished connection reports. */
export interface EgressOutcome {
  success: boolean;
  rule: string | null;
  errorCode?: string;
  errorMessage?: string;
}

/** What a program is told when its connection's audit row cannot be written. */
export const UNAUDITED = (host: string, port: number): string =>
  `Paddock egress: ${host}:${port} was not connected because its audit row could not be written; check the data directory's free space`;

/**
 * Counts bytes of one connection and writes its row. An allowed connection's row is written
 * when it opens ({@link open}: state `running`, so a crash during a long tunnel leaves a row
 * that the next start marks interrupted) and completed when it ends with the bytes each way
 * (`outputBytes` received, `sentBytes` sent) and the outcome; a connection refused before it
 * opens is one finished row.
 */
export class ConnectionRecord {
  readonly id = timeOrderedId('inv');
  private readonly startedAt = Date.now();
  private readonly t0 = performance.now();
  /** Bytes from the program to the upstream. */
  bytesSent = 0;
  /** Bytes from the upstream to the program. */
  bytesReceived = 0;
  private state: 'new' | 'open' | 'written' = 'new';
  /** Extra fields of the row's input (method, path, addresses), final once the row is opened. */
  readonly details: Record<string, unknown> = {};

  constructor(
    private readonly session: EgressSession,
    readonly kind: EgressKind,
    public principal: EgressPrincipal | null,
    public host: string,
    public port: number,
  ) {}

  /**
   * Writes the row of a connection the policy allowed, before any byte goes upstream. False
   * when the row cannot be written: the caller refuses the connection (no egress without its
   * row), and the reason goes to the computer's log.
   */
  async open(): Promise<boolean> {
    if (this.state !== 'new') return this.state === 'open';
    try {
      await this.session.audit.begin(this.start());
      this.state = 'open';
      return true;
    } catch (e) {
      this.state = 'written';
      this.session.onRefused(this.principal, `${UNAUDITED(this.host, this.port)} (${(e as Error).message})`);
      return false;
    }
  }

  /**
   * Completes the opened row, or writes the row of a refused connection (once; later calls do
   * nothing). A write that fails is reported to the computer's log; the connection is over.
   */
  finish(outcome: EgressOutcome): void {
    if (this.state === 'written') return;
    const opened = this.state === 'open';
    this.state = 'written';
    const end = {
      durationMs: Math.round(performance.now() - this.t0),
      outputBytes: this.bytesReceived,
      sentBytes: this.bytesSent,
      success: outcome.success,
      errorCode: outcome.errorCode ?? null,
      errorMessage: outcome.errorMessage ?? null,
      policyRule: outcome.rule,
    };
    const written = opened
      ? this.session.audit.complete(this.id, end)
      : this.session.audit.record({ ...this.start(), ...end });
    written.catch((e: unknown) =>
      this.session.onRefused(
        this.principal,
        `The audit row of the connection to ${this.host}:${this.port} could not be written: ${(e as Error).message}`,
      ),
    );
  }

  private start() {
    const p = this.principal;
    return {
      id: this.id,
      startedAt: this.startedAt,
      tool: EGRESS_TOOL,
      source: 'computer',
      caller: p?.caller ?? 'computer',
      principal: p?.principal ?? null,
      via: p?.via ?? 'direct',
      parentId: p?.parentId ?? null,
      generation: p?.generation ?? null,
      jobId: p?.jobId ?? null,
      input: { kind: this.kind, host: this.host, port: this.port, ...this.details },
    };
  }
}
