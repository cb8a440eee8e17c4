/**
 * What the computer view shows, read in one call: the computer's state, its terminals and the
 * new output of the one shown, the new output of the job the view follows, the preview, and the
 * approvals waiting for calls of the view's own caller. `version` fingerprints everything except
 * output, so a view that passes back the version it has only hears of a change.
 */
import { createHash } from 'node:crypto';
import type { Decider } from '../../approvals/deciders.js';
import type { ApprovalEvent, ApprovalView, Decision } from '../../approvals/types.js';
import type { ComputerManager } from '../../computer/manager.js';
import type { Disposable } from '../../shared/disposable.js';
import { isPaddockError } from '../../shared/errors.js';
import type { Principal } from '../../shared/principal.js';
import type { CallerContext, Permission } from '../../tools/tool.js';

/** Most output bytes of the shown terminal, and of the followed job, in one answer. */
export const VIEW_OUTPUT_BYTES = 65_536;

/** What the view tools need of the approval service (ApprovalService has it). */
export interface ViewApprovals {
  list(options: { pendingOnly?: boolean; limit?: number }): Promise<ApprovalView[]>;
  view(id: string): Promise<ApprovalView | undefined>;
  decide(id: string, decision: Decision): Promise<unknown>;
  decidersOf(principal: Principal): readonly Decider[];
  watch(watch: { listener: (event: ApprovalEvent) => void }): Disposable;
}

/** What the view tools are built on. */
export interface ViewDeps {
  computers: { for(caller: CallerContext): ComputerManager };
  approvals: ViewApprovals;
  /** The permission a tool has (the view is told whether the person may type). */
  permissionOf(tool: string): Permission | undefined;
}

/** What the view passes back: where it is in each stream, and the version it shows. */
export interface ViewPosition {
  terminalId?: string | undefined;
  terminalCursor?: string | undefined;
  jobId?: string | undefined;
  jobCursor?: string | undefined;
  version?: string | undefined;
}

/** An approval card: the call that waits, and whether this view may decide it. */
export interface ApprovalCard {
  id: string;
  tool: string;
  description: string | null;
  arguments: unknown;
  requestedAt: number;
  expiresAt: number;
}

/** The approvals waiting for calls of `caller` (a view never sees another caller's). */
export async function pendingOf(approvals: ViewApprovals, caller: string): Promise<ApprovalCard[]> {
  // the most a listing gives: pending calls of others must not push this caller's out
  const pending = await approvals.list({ pendingOnly: true, limit: 1000 });
  return pending
    .filter((a) => a.caller === caller && a.waiting)
    .map((a) => ({
      id: a.id,
      tool: a.tool,
      description: a.description,
      arguments: parseArguments(a.arguments),
      requestedAt: a.requestedAt,
      expiresAt: a.expiresAt,
    }));
}

function parseArguments(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

/** Reads the view's state once; `fresh` says whether it holds anything the view has not seen. */
export async function readViewState(
  deps: ViewDeps,
  manager: ComputerManager,
  caller: CallerContext,
  at: ViewPosition,
): Promise<{ state: Record<string, unknown>; fresh: boolean }> {
  const status = manager.status();
  const terminals = manager.terminals.list();
  const shown = terminals.find((t) => t.active) ?? null;
  const terminal = shown
    ? readTerminal(manager, shown.id, at.terminalId === shown.id ? at.terminalCursor : undefined)
    : null;
  const job = at.jobId ? readJob(manager, at.jobId, at.jobCursor) : null;
  const approvals = await pendingOf(deps.approvals, caller.caller);
  const typing = deps.permissionOf('view_type_in_terminal');
  // keystrokes are not approved one by one: the view types only where the policy lets it outright
  const canType = typing === 'auto';
  const canDecide = deps.approvals.decidersOf(caller.principal).includes('elicitation');
  const visible = {
    computer: {
      generation: status.generation,
      lifecycle: status.lifecycle,
      profileId: status.profileId,
      profileName: status.profileName,
      bootError: status.bootError,
      listeningPorts: status.listeningPorts,
    },
    terminals: terminals.map((t) => ({
      id: t.id,
      label: t.label,
      active: t.active,
      ready: t.ready,
      exited: t.exited,
      heldBy: t.heldBy,
      cols: t.cols,
      rows: t.rows,
    })),
    preview: status.preview,
    approvals,
    jobState: job && 'state' in job ? job.state : null,
    canType,
    canDecide,
  };
  const version = createHash('sha256').update(JSON.stringify(visible)).digest('base64url').slice(0, 22);
  const fresh =
    version !== at.version ||
    (terminal !== null && 'output' in terminal && terminal.output.length > 0) ||
    (job !== null && 'stdout' in job && (job.stdout.length > 0 || job.stderr.length > 0));
  return {
    state: {
      ...visible,
      version,
      terminal,
      job,
      principal: caller.principal.kind,
    },
    fresh,
  };
}

/** New output of a terminal after `cursor`; a cursor that fell behind continues from the oldest kept. */
function readTerminal(manager: ComputerManager, id: string, cursor: string | undefined) {
  try {
    return { ...manager.terminals.read(id, cursor, VIEW_OUTPUT_BYTES), skipped: false };
  } catch (e) {
    const oldest = isPaddockError(e) && e.code === 'OUTPUT_EXPIRED' ? e.details.oldestCursor : undefined;
    if (typeof oldest !== 'string') throw e;
    return { ...manager.terminals.read(id, oldest, VIEW_OUTPUT_BYTES), skipped: true };
  }
}

/** New output of the followed job, or why it cannot be read (replaced generation, unknown id). */
function readJob(manager: ComputerManager, id: string, cursor: string | undefined) {
  try {
    return manager.readJob(id, cursor, VIEW_OUTPUT_BYTES);
  } catch (e) {
    if (!isPaddockError(e)) throw e;
    if (e.code === 'OUTPUT_EXPIRED' && typeof e.details.oldestCursor === 'string')
      return manager.readJob(id, e.details.oldestCursor, VIEW_OUTPUT_BYTES);
    return { jobId: id, error: { code: e.code, message: e.message } };
  }
}

/**
 * Resolves when something the view shows may have changed: output of the shown terminal or the
 * followed job, a terminal or preview change, an approval of `caller`; or after `waitMs`, or
 * when `signal` aborts. Lifecycle changes (a boot finishing) are caught by a check each second.
 */
export async function untilChange(
  deps: ViewDeps,
  manager: ComputerManager,
  caller: string,
  at: ViewPosition,
  waitMs: number,
  signal: AbortSignal,
): Promise<void> {
  const stop = new AbortController();
  const subs: Disposable[] = [];
  try {
    await new Promise<void>((resolve) => {
      const wake = () => resolve();
      const lifecycle = () => {
        const s = manager.status();
        return `${s.generation}:${s.lifecycle}`;
      };
      const seen = lifecycle();
      const timer = setTimeout(wake, waitMs);
      const tick = setInterval(() => {
        if (lifecycle() !== seen) wake();
      }, 1000);
      subs.push({ dispose: () => clearTimeout(timer) }, { dispose: () => clearInterval(tick) });
      signal.addEventListener('abort', wake, { once: true });
      subs.push({ dispose: () => signal.removeEventListener('abort', wake) });
      subs.push(manager.terminals.onChange(wake), manager.preview.onChange(wake));
      subs.push(
        deps.approvals.watch({
          listener: (event) => {
            if (event.kind !== 'rules' && event.approval.caller === caller) wake();
          },
        }),
      );
      const active = manager.terminals.active();
      if (active) {
        const cursor = at.terminalId === active.id ? at.terminalCursor : undefined;
        try {
          subs.push(manager.terminals.subscribe(active.id, cursor, wake));
        } catch {
          wake();
        }
      }
      if (at.jobId) {
        try {
          const { job } = manager.resolveJob(at.jobId);
          if (!job.terminationObserved)
            void job.waitForChange(at.jobCursor, waitMs, stop.signal).then(wake, wake);
        } catch {
          // a job of a replaced generation: nothing more will come
        }
      }
    });
  } finally {
    stop.abort();
    for (const s of subs) s.dispose();
  }
}
