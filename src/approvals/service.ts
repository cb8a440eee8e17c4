import { PaddockError } from '../shared/errors.js';
import { pidAlive } from '../shared/pid.js';
import type { Principal } from '../shared/principal.js';
import type { Admission, AdmitRequest, ApprovalGate } from '../tools/approval-gate.js';
import type { CallerContext, Tool } from '../tools/tool.js';
import { assertMayDecide, DEFAULT_DECIDERS, type Decider, type Deciders, decidersOf } from './deciders.js';
import { elicitDecision } from './elicit.js';
import { admissionOf, alreadyEnded, approvalRequest, tooManyPending } from './outcomes.js';
import { ApprovalRulesCache } from './rules-cache.js';
import type { ApprovalServiceOptions, McpApprovalMode } from './service-options.js';
import type {
  Approval,
  ApprovalEvent,
  ApprovalRule,
  ApprovalStatus,
  ApprovalView,
  ApprovalWatch,
  Decision,
  Disposable,
} from './types.js';

export type { ApprovalServiceOptions, ApprovalView, Decider, Deciders, McpApprovalMode };

/** How often a waiting call tells a caller that asked for progress that it still waits. */
const PROGRESS_INTERVAL_MS = 1000;

interface Waiter {
  approval: Approval;
  /** Whose call waits (decides who may decide it). */
  principal: Principal;
  settle(approval: Approval): void;
}

/**
 * Approvals of `ask` calls: decides who waits (the MCP client as before, or the gateway),
 * records each request bound to its exact arguments, waits for a decision from the MCP
 * client (elicitation), the dock or the CLI, and ends it as a denial at its expiry. Every
 * ending wakes the waiting call at once. Pending records of an earlier server are marked
 * `interrupted` when it opens (`ApprovalService.open`).
 */
export class ApprovalService implements ApprovalGate {
  private readonly waiters = new Map<string, Waiter>();
  private readonly watchers = new Set<ApprovalWatch>();
  /** "Approve for this session": caller → tool → the approval that granted it. */
  private readonly sessionGrants = new Map<string, Map<string, { id: string; by: string }>>();

  private readonly ruleCache: ApprovalRulesCache;

  /** Use {@link ApprovalService.open}, which also reads the store. */
  private constructor(private readonly options: ApprovalServiceOptions) {
    this.ruleCache = new ApprovalRulesCache(options.store, options.logger);
  }

  /**
   * The service over its store: pending records of a process that is gone are marked
   * `interrupted`, and the active rules are read (and re-read every `rulesRefreshMs`).
   */
  static async open(options: ApprovalServiceOptions): Promise<ApprovalService> {
    const service = new ApprovalService(options);
    const interrupted = await options.store.interruptOrphans(Date.now());
    if (interrupted.length > 0)
      options.logger.warn('approval.interrupted', { approvals: interrupted.length });
    await service.ruleCache.start(options.rulesRefreshMs);
    return service;
  }

  preapproved(tool: Tool, caller: CallerContext): boolean {
    const agent = caller.approvals?.agent;
    return agent !== undefined && this.ruleCache.allows(agent, tool.name);
  }

  /** Where a person may decide the calls of `principal`. */
  decidersOf(principal: Principal): readonly Decider[] {
    return decidersOf(this.options.deciders ?? DEFAULT_DECIDERS, principal);
  }

  /**
   * Who decides this caller's `ask` calls. A third party's attended call always waits for the
   * gateway: no client confirms its own call, and one nobody decides expires as a denial.
   */
  whoWaits(caller: CallerContext): 'client' | 'gateway' | 'nobody' {
    if (!caller.attended) return caller.approvals?.waitMs !== undefined ? 'gateway' : 'nobody';
    if (caller.principal.kind !== 'owner') return 'gateway';
    if (!caller.caller.startsWith('mcp:')) return 'client';
    if (this.options.mcp) return this.options.mcp;
    return caller.approvals?.elicit || caller.approvals?.inView || this.dockOpen() ? 'gateway' : 'client';
  }

  /** A signed-in dock page watches approvals. */
  dockOpen(): boolean {
    for (const w of this.watchers) if (w.decider) return true;
    return false;
  }

  async admit(request: AdmitRequest): Promise<Admission> {
    const { tool, caller } = request;
    const agent = caller.approvals?.agent;
    const rule = agent === undefined ? undefined : await this.options.store.activeRule(agent, tool.name);
    if (rule) {
      return {
        run: true,
        approvalId: rule.approvalId ?? rule.id,
        approver: rule.createdBy,
        policyRule: `approvals.rules[${rule.id}]`,
      };
    }
    const grant = this.sessionGrants.get(caller.caller)?.get(tool.name);
    if (grant) return { run: true, approvalId: grant.id, approver: grant.by };
    switch (this.whoWaits(caller)) {
      case 'client':
        return { run: true };
      case 'nobody':
        return {
          run: false,
          error: new PaddockError(
            'PERMISSION_REQUIRED',
            `Tool "${tool.name}" needs a person's approval (${request.rule}) and nobody can approve it here; call it from an attended session, or let the agent wait (AGENT.md approvals.wait).`,
            { rule: request.rule },
          ),
        };
      case 'gateway':
        return this.wait(request);
    }
  }

  private async wait(request: AdmitRequest): Promise<Admission> {
    const ended = await this.record(request);
    return 'run' in ended ? ended : admissionOf(ended);
  }

  /**
   * Asks a person about something that is not a tool call (a computer's connection that
   * `policy.http.ask` covers): recorded and decided like any approval, by the dock or the CLI.
   * It waits only while a dock page is open to decide; with nobody there it resolves null at once.
   * Resolves with the ended record (its status and scope), or a refusal for too many pending ones.
   */
  async askPerson(request: AdmitRequest): Promise<Approval | Admission | null> {
    if (!this.dockOpen()) return null;
    return this.record(request);
  }

  /** Records an approval and waits for its end (or refuses at once past the pending limit). */
  private async record(request: AdmitRequest): Promise<Approval | Admission> {
    const { tool, caller, store } = { ...request, store: this.options.store };
    const max = this.options.maxPendingPerCaller;
    if ((await store.pendingCount(caller.caller)) >= max) return { run: false, error: tooManyPending(max) };
    const now = Date.now();
    const windowMs = caller.attended ? this.options.timeoutMs : (caller.approvals?.waitMs ?? 0);
    const approval = await store.insert(approvalRequest(request, now, windowMs));
    this.options.logger.info('approval.requested', {
      approvalId: approval.id,
      tool: tool.name,
      caller: caller.caller,
    });
    const ended = await new Promise<Approval>((resolve) => {
      const elicitation = new AbortController();
      const timer = setTimeout(
        () =>
          void this.endByServer(
            approval.id,
            'expired',
            'No one decided before the approval expired; an expired approval is a denial.',
          ),
        Math.max(0, approval.expiresAt - Date.now()),
      );
      const heartbeat = caller.onProgress
        ? setInterval(() => {
            caller.onProgress?.({
              progress: Math.round((Date.now() - now) / 1000),
              message: `${tool.name} is waiting for approval ${approval.id}`,
            });
          }, PROGRESS_INTERVAL_MS)
        : undefined;
      const onAbort = () =>
        void this.endByServer(approval.id, 'cancelled', 'The caller cancelled the call while it waited.');
      this.waiters.set(approval.id, {
        approval,
        principal: caller.principal,
        settle: (a) => {
          clearTimeout(timer);
          clearInterval(heartbeat);
          caller.signal?.removeEventListener('abort', onAbort);
          elicitation.abort();
          this.waiters.delete(approval.id);
          resolve(a);
        },
      });
      if (caller.signal?.aborted) onAbort();
      else caller.signal?.addEventListener('abort', onAbort, { once: true });
      this.emit({ kind: 'requested', approval });
      void this.told(caller, { id: approval.id, tool: tool.name });
      elicitDecision(
        request,
        approval,
        elicitation.signal,
        {
          waiting: (id) => this.waiters.has(id),
          decide: (id, decision) => this.decide(id, decision),
          logger: this.options.logger,
        },
        this.decidersOf(caller.principal).includes('elicitation'),
      );
    });
    await this.told(caller, null);
    return ended;
  }

  /** Tells the caller that it waits (or no more); a failure to record it is logged, never thrown. */
  private async told(caller: CallerContext, approval: { id: string; tool: string } | null): Promise<void> {
    try {
      await caller.approvals?.onWaiting?.(approval);
    } catch (e) {
      this.options.logger.warn('approval.waiting_not_recorded', { error: (e as Error).message });
    }
  }

  /**
   * Records a person's decision and wakes the waiting call. Throws NOT_FOUND for an unknown
   * approval and INVALID_ARGUMENT for one already decided or ended (a decision is final).
   */
  async decide(id: string, decision: Decision): Promise<Approval> {
    const { store, logger } = this.options;
    const current = await store.get(id);
    if (!current) {
      throw new PaddockError(
        'NOT_FOUND',
        `No approval "${id}"; list the pending ones with \`paddock approvals list\`.`,
        { id },
      );
    }
    if (current.status !== 'pending') throw alreadyEnded(current);
    const scope = decision.scope ?? 'once';
    if (scope === 'always' && (!decision.approve || current.agent === null)) {
      throw new PaddockError(
        'INVALID_ARGUMENT',
        '"Always allow" applies to an approval of an agent run only; approve this one once or for the session.',
        { id },
      );
    }
    const waiter = this.waiters.get(id);
    if (waiter)
      assertMayDecide(this.options.deciders ?? DEFAULT_DECIDERS, waiter.principal, decision.via, id);
    const owner = await store.ownerPid(id);
    if (!waiter && owner !== null && owner !== process.pid && pidAlive(owner)) {
      throw new PaddockError(
        'NOT_RUNNING',
        `The call of approval "${id}" waits in another Paddock process (pid ${owner}, e.g. a \`paddock agents run\` of the CLI), which this server cannot wake; it ends at its expiry. Run agents that wait for approval from the dock or on a schedule of the server.`,
        { id, pid: owner },
      );
    }
    if (!waiter) {
      await this.endByServer(id, 'interrupted', 'No call waited for this approval any more.');
      throw new PaddockError(
        'NOT_RUNNING',
        `No call waits for approval "${id}" any more (its server stopped); nothing ran. The caller can retry the call.`,
        { id },
      );
    }
    const ended = await store.end(id, {
      status: decision.approve ? 'approved' : 'denied',
      by: decision.by,
      via: decision.via,
      reason: decision.reason?.trim() ? decision.reason.trim() : null,
      scope: decision.approve ? scope : null,
      at: Date.now(),
    });
    if (!ended) throw alreadyEnded((await store.get(id)) ?? current);
    if (ended.status === 'approved' && scope === 'session') {
      const grants = this.sessionGrants.get(ended.caller) ?? new Map<string, { id: string; by: string }>();
      grants.set(ended.tool, { id, by: decision.by });
      this.sessionGrants.set(ended.caller, grants);
    }
    if (ended.status === 'approved' && scope === 'always' && ended.agent !== null) {
      await store.addRule(ended.agent, ended.tool, decision.by, id, Date.now());
      await this.ruleCache.refresh();
      this.emit({ kind: 'rules' });
    }
    logger.info('approval.decided', {
      approvalId: id,
      tool: ended.tool,
      status: ended.status,
      by: decision.by,
      via: decision.via,
      scope,
    });
    this.emit({ kind: 'decided', approval: ended });
    waiter.settle(ended);
    return ended;
  }

  /**
   * Ends a pending approval without a person (expiry, cancel, shutdown) and wakes its call.
   * When the store cannot record it, the call still wakes, refused (the record stays pending
   * until the next start marks it interrupted).
   */
  private async endByServer(
    id: string,
    status: Exclude<ApprovalStatus, 'pending' | 'approved' | 'denied'>,
    reason: string,
  ): Promise<void> {
    let ended: Approval | undefined;
    try {
      ended = await this.options.store.end(id, {
        status,
        by: null,
        via: 'server',
        reason,
        scope: null,
        at: Date.now(),
      });
    } catch (e) {
      this.options.logger.error('approval.end_failed', { approvalId: id, error: (e as Error).message });
      const waiter = this.waiters.get(id);
      waiter?.settle({ ...waiter.approval, status, reason, decidedVia: 'server' });
      return;
    }
    if (!ended) return;
    this.options.logger.info('approval.ended', { approvalId: id, tool: ended.tool, status });
    this.emit({ kind: 'decided', approval: ended });
    this.waiters.get(id)?.settle(ended);
  }

  /** The caller's session ended: its "approve for this session" grants go with it. */
  endSession(caller: string): void {
    this.sessionGrants.delete(caller);
  }

  /** One approval as shown to a person. */
  async view(id: string): Promise<ApprovalView | undefined> {
    const a = await this.options.store.get(id);
    return a ? this.toView(a) : undefined;
  }

  /** Newest first: the pending ones, or the recent ones of every status. */
  async list(options: { pendingOnly?: boolean; limit?: number } = {}): Promise<ApprovalView[]> {
    return (await this.options.store.list(options)).map((a) => this.toView(a));
  }

  rules(all = false): Promise<ApprovalRule[]> {
    return this.options.store.rules(all);
  }

  /** Removes an "always allow" rule; the tool asks again from the next call on. */
  async removeRule(id: string, by: string): Promise<ApprovalRule> {
    const rule = await this.options.store.removeRule(id, by, Date.now());
    await this.ruleCache.refresh();
    this.options.logger.info('approval.rule_removed', { ruleId: id, agent: rule.agent, tool: rule.tool, by });
    this.emit({ kind: 'rules' });
    return rule;
  }

  /** A link to the approval in the dock, when the dock's address is known. */
  link(id: string): string | undefined {
    return this.options.link?.(id);
  }

  /** Subscribes to requests and decisions; a `decider` watch counts as an open dock session. */
  watch(watch: ApprovalWatch): Disposable {
    const entry = { ...watch };
    this.watchers.add(entry);
    return { dispose: () => void this.watchers.delete(entry) };
  }

  /** Ends every waiting call: the server is stopping. */
  async close(): Promise<void> {
    this.ruleCache.stop();
    await Promise.all(
      [...this.waiters.keys()].map((id) =>
        this.endByServer(id, 'interrupted', 'The server stopped while the call waited for this approval.'),
      ),
    );
  }

  private toView(a: Approval): ApprovalView {
    return { ...a, description: this.options.describe?.(a.tool) ?? null, waiting: this.waiters.has(a.id) };
  }

  private emit(event: ApprovalEvent): void {
    for (const w of [...this.watchers]) {
      try {
        w.listener(event);
      } catch (e) {
        this.options.logger.warn('approval.listener_failed', { error: (e as Error).message });
      }
    }
  }
}
