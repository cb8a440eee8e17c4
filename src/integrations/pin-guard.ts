/**
 * The rug-pull guard: every listed upstream tool is judged against its pin before it is
 * registered. A server's first list is pinned as seen; afterwards a new or changed tool is
 * quarantined (not listed, not callable) with an audit row and an event for the dock, until a
 * person accepts or rejects the change. Tools that did not change keep working.
 */

import type { AuditStore } from '../audit/types.js';
import type { Disposable } from '../shared/disposable.js';
import { Emitter } from '../shared/emitter.js';
import { PaddockError } from '../shared/errors.js';
import { timeOrderedId } from '../shared/ids.js';
import type { Logger } from '../shared/logger.js';
import type { PinWrite, ToolPin, ToolPinStore } from '../store/tool-pins.js';
import type { UpstreamToolDef } from './connection-types.js';
import { upstreamToolName } from './naming.js';
import { describeChange, judge, type PinVerdict, pinOf, type ToolChange } from './tool-pins.js';

/** Options of {@link PinGuard}. */
export interface PinGuardOptions {
  store: ToolPinStore;
  /** Where quarantines and review decisions are recorded; none in unit tests of the guard. */
  audit?: AuditStore;
  logger: Logger;
}

/** What a review decided. */
export type ReviewDecision = 'accept' | 'reject';

/** Emitted when a server's set of quarantined tools changes (new quarantine, or a decision). */
export interface QuarantineEvent {
  server: string;
  /** The server's changes now (quarantined and removed tools). */
  changes: ToolChange[];
}

interface ServerState {
  pins: ToolPin[];
  defs: UpstreamToolDef[] | null;
  verdict: PinVerdict | null;
}

export class PinGuard {
  private readonly servers = new Map<string, ServerState>();
  private readonly changed: Emitter<QuarantineEvent>;
  /** Audit rows being written (never rejected: a failed write is logged). */
  private readonly writes = new Set<Promise<void>>();

  constructor(private readonly options: PinGuardOptions) {
    this.changed = new Emitter((e) =>
      options.logger.error('integrations.listener_failed', { error: (e as Error).message }),
    );
  }

  /** Reads the stored pins of `servers` (before any list is judged). */
  async load(servers: readonly string[]): Promise<void> {
    await Promise.all(servers.map((s) => this.reload(s)));
  }

  /**
   * The tools of `defs` that may be registered. The first list of a server with no pins is
   * pinned as it is (when another server of the fleet pinned first, its pins decide).
   */
  async usable(server: string, defs: readonly UpstreamToolDef[]): Promise<UpstreamToolDef[]> {
    const state = this.servers.get(server) ?? (await this.reload(server));
    state.defs = [...defs];
    let verdict = judge(server, defs, state.pins);
    if (verdict.firstSight && defs.length > 0) {
      const now = Date.now();
      const stored = await this.options.store.pinFirstSight(
        server,
        defs.map((d) => pinOf(server, d, 'first-sight', now)),
      );
      if (stored) this.options.logger.info('integrations.pinned', { server, tools: defs.length });
      await this.reload(server);
      verdict = judge(server, defs, state.pins);
    }
    const before = new Set(
      (state.verdict?.changes ?? []).map((c) => `${c.kind}:${c.tool}:${c.liveHash ?? ''}:${c.rejected}`),
    );
    state.verdict = verdict;
    const fresh = verdict.changes.filter(
      (c) => !before.has(`${c.kind}:${c.tool}:${c.liveHash ?? ''}:${c.rejected}`),
    );
    // the rows are written after this returns: the caller unregisters the tools first
    for (const c of fresh.filter((x) => x.kind !== 'removed')) {
      this.options.logger.warn('integrations.quarantined', {
        server,
        tool: c.tool,
        change: c.kind,
        fields: c.fields,
      });
      this.track(
        this.record(c, 'paddock', {
          success: false,
          errorCode: 'TOOL_QUARANTINED',
          errorMessage: `${describeChange(c)}; it is quarantined until a person reviews it.`,
        }),
      );
    }
    if (fresh.length > 0 || verdict.changes.length !== before.size) this.emit(server);
    return verdict.usable;
  }

  /** Added, changed and removed tools of `server` (of every server when absent), as last judged. */
  changes(server?: string): ToolChange[] {
    const names = server === undefined ? [...this.servers.keys()] : [server];
    return names.flatMap((n) => this.servers.get(n)?.verdict?.changes ?? []);
  }

  /** The TOOL_QUARANTINED error for a registry name that is quarantined now, else undefined. */
  quarantineError(name: string): PaddockError | undefined {
    const change = this.changes().find(
      (c) => c.kind !== 'removed' && upstreamToolName(c.server, c.tool) === name,
    );
    return change ? quarantinedError(change) : undefined;
  }

  /**
   * Accepts or rejects the changes of `server` (only the named upstream tools when `tools` is
   * given). Accept pins the listed definition (or drops the pin of a removed tool); reject
   * records the refused definition, and the tool stays quarantined. Pins are re-read first, so
   * a decision made on another server of the fleet is seen. Returns the changes decided.
   */
  async decide(
    server: string,
    decision: ReviewDecision,
    decidedBy: string,
    tools?: readonly string[],
  ): Promise<ToolChange[]> {
    const state = await this.reload(server);
    if (!state.defs) {
      throw new PaddockError(
        'NOT_RUNNING',
        `MCP server "${server}" has not listed its tools in this run, so there is nothing to review yet; run \`paddock servers tools ${server}\` first.`,
        { server },
      );
    }
    const current = judge(server, state.defs, state.pins).changes;
    const chosen = tools ? current.filter((c) => tools.includes(c.tool)) : current;
    const unknown = (tools ?? []).filter((t) => !current.some((c) => c.tool === t));
    if (unknown.length > 0) {
      throw new PaddockError(
        'NOT_FOUND',
        `MCP server "${server}" has no pending change for ${unknown.map((t) => `"${t}"`).join(', ')}; run \`paddock servers review ${server}\` to see the changes.`,
        { server, tools: unknown },
      );
    }
    const now = Date.now();
    const writes: PinWrite[] = [];
    for (const c of chosen) {
      const def = state.defs.find((d) => d.name === c.tool);
      if (decision === 'accept') {
        if (def) writes.push({ op: 'set', pin: pinOf(server, def, decidedBy, now) });
        else writes.push({ op: 'delete', server, tool: c.tool, decision: 'pinned' });
        writes.push({ op: 'delete', server, tool: c.tool, decision: 'rejected' });
      } else if (def) {
        writes.push({ op: 'set', pin: { ...pinOf(server, def, decidedBy, now), decision: 'rejected' } });
      }
    }
    if (writes.length > 0) await this.options.store.apply(writes);
    await this.reload(server);
    for (const c of chosen) {
      this.options.logger.info('integrations.reviewed', { server, tool: c.tool, decision, by: decidedBy });
      await this.record(c, decidedBy, {
        success: true,
        errorCode: null,
        errorMessage: null,
        decision,
      });
    }
    return chosen;
  }

  /** Re-reads the pins of `server` from the store (another server of the fleet may have decided). */
  async reload(server: string): Promise<ServerState> {
    const pins = await this.options.store.list(server);
    let state = this.servers.get(server);
    if (!state) {
      state = { pins, defs: null, verdict: null };
      this.servers.set(server, state);
    } else state.pins = pins;
    return state;
  }

  /** The last list of `server`, if one was judged (the service re-judges it after a decision). */
  lastList(server: string): UpstreamToolDef[] | null {
    return this.servers.get(server)?.defs ?? null;
  }

  /** Settles once the audit rows of quarantines seen so far are written. */
  async flush(): Promise<void> {
    await Promise.all(this.writes);
  }

  private track(write: Promise<void>): void {
    this.writes.add(write);
    void write.finally(() => this.writes.delete(write));
  }

  /** Fires after a server's changes are judged anew or decided. */
  onChange(listener: (event: QuarantineEvent) => void): Disposable {
    return this.changed.on(listener);
  }

  private emit(server: string): void {
    this.changed.emit({ server, changes: this.changes(server) });
  }

  /** An audit row for a quarantine or a decision; a failed write is logged (the guard still holds). */
  private async record(
    change: ToolChange,
    caller: string,
    outcome: {
      success: boolean;
      errorCode: string | null;
      errorMessage: string | null;
      decision?: ReviewDecision;
    },
  ): Promise<void> {
    const audit = this.options.audit;
    if (!audit) return;
    try {
      await audit.record({
        id: timeOrderedId('inv'),
        startedAt: Date.now(),
        durationMs: 0,
        tool: upstreamToolName(change.server, change.tool),
        source: `mcp:${change.server}`,
        caller,
        via: 'direct',
        input: {
          event: outcome.decision ? `tool.${outcome.decision}ed` : 'tool.quarantined',
          change: change.kind,
          fields: change.fields,
          pinnedHash: change.pinnedHash,
          liveHash: change.liveHash,
        },
        outputBytes: 0,
        success: outcome.success,
        errorCode: outcome.errorCode,
        errorMessage: outcome.errorMessage,
      });
    } catch (e) {
      this.options.logger.error('audit.failed', { tool: change.tool, error: (e as Error).message });
    }
  }
}

/** The error a caller of a quarantined tool gets: what changed and how a person reviews it. */
export function quarantinedError(change: ToolChange): PaddockError {
  const refused = change.rejected
    ? ' A person already rejected this definition; it stays quarantined until the server returns to the pinned one or a new one is accepted.'
    : '';
  return new PaddockError(
    'TOOL_QUARANTINED',
    `${describeChange(change)} since a person pinned it, so it is quarantined: not listed and not callable until the change is reviewed.${refused} Ask an operator to run \`paddock servers review ${change.server}\` (or open the tool review in the dock) and accept the change.`,
    {
      server: change.server,
      tool: change.tool,
      change: change.kind,
      fields: change.fields,
      pinnedHash: change.pinnedHash,
      liveHash: change.liveHash,
    },
  );
}
