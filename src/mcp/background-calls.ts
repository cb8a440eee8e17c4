/**
 * Calls of 2026-era clients that outlive one request: a call that waits for a person's answer
 * (its `ask` approval, answered by the client through an `input_required` round trip), and a
 * call that continues as a task (the tasks extension). Each is an ordinary gateway call — one
 * pipeline, one audit row — started with the caller context of the request that made it; only
 * the waiting moves out of the request. A call belongs to the principal that made it: every
 * later request about it (an answer, a task poll, a cancel) is matched on the principal, and a
 * call of another principal is answered as unknown.
 */
import { randomBytes } from 'node:crypto';
import { PaddockError } from '../shared/errors.js';
import type { ApprovalAnswer, ApprovalPrompt } from '../tools/approval-gate.js';
import type { CallOutcome, Gateway } from '../tools/gateway.js';
import type { CallerContext } from '../tools/tool.js';

/** A call's state as a poller sees it. */
export type CallState =
  | { kind: 'working' }
  | { kind: 'input'; prompt: ApprovalPrompt; key: string }
  | { kind: 'done'; outcome: CallOutcome };

/** One call started by a request and kept after it. */
export interface BackgroundCall {
  readonly id: string;
  /** `principalKey` of the caller that started it. */
  readonly principal: string;
  readonly tool: string;
  /** The arguments, as JSON (an answer must come for the same call). */
  readonly argsJson: string;
  readonly createdAt: number;
  lastUpdatedAt: number;
  /** Set once the call became a task the client polls. */
  task: boolean;
  /** Set once a request ended while the call went on (an answer or a poll will come for it). */
  kept: boolean;
  /** The call ended because it was cancelled (a task's `tasks/cancel`, a revocation). */
  cancelled: boolean;
  state: CallState;
  readonly outcome: Promise<CallOutcome>;
}

interface Entry extends BackgroundCall {
  controller: AbortController;
  /** Resolves the waiting question with the client's answer. */
  answer?: (answer: ApprovalAnswer) => void;
  /** Woken whenever the state changes. */
  changed: Set<() => void>;
  expiry?: NodeJS.Timeout;
}

export interface BackgroundCallsOptions {
  /** How long a finished call's result is kept for a late poll or retry. Default 10 minutes. */
  keepDoneMs?: number;
  /** Most calls kept at once per principal; past it the oldest finished one is dropped. */
  maxPerPrincipal?: number;
}

/** A request's view of the call it started or resumed: done, waiting for input, or still running. */
export type Settled =
  | { kind: 'done'; outcome: CallOutcome }
  | { kind: 'input'; prompt: ApprovalPrompt; key: string }
  | { kind: 'running' };

/**
 * The background calls of the server's 2026-era clients (one per server, shared by the HTTP
 * endpoint and the socket). Calls are in memory: they end with the server, as today's calls
 * waiting in a session do.
 */
export class BackgroundCalls {
  private readonly calls = new Map<string, Entry>();
  /** Calls answered within their request, per principal, for a revocation to cancel. */
  private readonly inRequest = new Map<string, Set<AbortController>>();
  private readonly keepDoneMs: number;
  private readonly maxPerPrincipal: number;

  constructor(
    private readonly gateway: Gateway,
    options: BackgroundCallsOptions = {},
  ) {
    this.keepDoneMs = options.keepDoneMs ?? 10 * 60_000;
    this.maxPerPrincipal = options.maxPerPrincipal ?? 256;
  }

  /**
   * Starts a gateway call as `caller` (principal `principal`). A question for a person
   * (its approval) is kept for the client to answer instead of being pushed to it.
   */
  start(
    name: string,
    args: Record<string, unknown>,
    caller: CallerContext,
    principal: string,
  ): BackgroundCall {
    this.makeRoom(principal);
    const controller = new AbortController();
    const id = randomBytes(16).toString('base64url');
    const now = Date.now();
    let entry: Entry;
    const elicit = (prompt: ApprovalPrompt, signal: AbortSignal) =>
      new Promise<ApprovalAnswer>((resolve, reject) => {
        const key = `approval-${prompt.approvalId}`;
        const done = () => {
          entry.answer = undefined;
          if (entry.state.kind === 'input') this.set(entry, { kind: 'working' });
        };
        entry.answer = (a) => {
          done();
          resolve(a);
        };
        signal.addEventListener(
          'abort',
          () => {
            done();
            reject(new Error('The question was withdrawn.'));
          },
          { once: true },
        );
        this.set(entry, { kind: 'input', prompt, key });
      });
    // only a caller whose person can be asked (it declared elicitation) gets the question
    const asks = caller.approvals?.elicit !== undefined;
    const outcome = this.gateway.call(name, args, {
      ...caller,
      ...(asks ? { approvals: { ...caller.approvals, elicit } } : {}),
      signal: controller.signal,
    });
    entry = {
      id,
      principal,
      tool: name,
      argsJson: JSON.stringify(args),
      createdAt: now,
      lastUpdatedAt: now,
      task: false,
      kept: false,
      cancelled: false,
      state: { kind: 'working' },
      outcome,
      controller,
      changed: new Set(),
    };
    this.calls.set(id, entry);
    void outcome.then((o) => this.finish(entry, o));
    return entry;
  }

  /** The call `id` of `principal` (undefined for an unknown id or another principal's call). */
  get(id: string, principal: string): BackgroundCall | undefined {
    const entry = this.calls.get(id);
    return entry && entry.principal === principal ? entry : undefined;
  }

  /**
   * Waits until the call is done or asks a question, or until `signal` aborts or `limitMs`
   * passes (then it is `running`). Aborting `signal` does not cancel the call.
   */
  async settle(call: BackgroundCall, signal?: AbortSignal, limitMs?: number): Promise<Settled> {
    const entry = call as Entry;
    for (;;) {
      const now = current(entry);
      if (now) return now;
      if (signal?.aborted) return { kind: 'running' };
      const woke = await new Promise<boolean>((resolve) => {
        const wake = () => {
          cleanup();
          resolve(true);
        };
        const stop = () => {
          cleanup();
          resolve(false);
        };
        const timer = limitMs === undefined ? undefined : setTimeout(stop, limitMs);
        const cleanup = () => {
          entry.changed.delete(wake);
          clearTimeout(timer);
          signal?.removeEventListener('abort', stop);
        };
        entry.changed.add(wake);
        signal?.addEventListener('abort', stop, { once: true });
      });
      if (!woke) return current(entry) ?? { kind: 'running' };
    }
  }

  /** Gives the client's answer to the question `key` of the call; false when none waits under that key. */
  answer(call: BackgroundCall, key: string, answer: ApprovalAnswer): boolean {
    const entry = call as Entry;
    if (entry.state.kind !== 'input' || entry.state.key !== key || !entry.answer) return false;
    entry.answer(answer);
    return true;
  }

  /** Marks the call as a task (kept until its result was kept `keepDoneMs`). */
  makeTask(call: BackgroundCall): void {
    (call as Entry).task = true;
    this.keep(call);
  }

  /**
   * Keeps the call after the request that started it ends (it waits for an answer, or is a
   * task): its result stays `keepDoneMs` after it ends. A call never kept is forgotten as soon
   * as it ends, its result having gone to the request that waited for it.
   */
  keep(call: BackgroundCall): void {
    const entry = call as Entry;
    entry.kept = true;
    if (entry.state.kind === 'done' && !entry.expiry) this.expireLater(entry);
  }

  /** Cancels the call (its gateway call is aborted; the audit row says so). */
  cancel(call: BackgroundCall): void {
    const entry = call as Entry;
    if (entry.state.kind === 'done') return;
    entry.cancelled = true;
    entry.controller.abort();
  }

  /**
   * A signal for a call answered within its request (no background needed) that a revocation
   * of `principal` aborts too; `done` forgets it.
   */
  track(principal: string, signal: AbortSignal): { signal: AbortSignal; done(): void } {
    const controller = new AbortController();
    const forward = () => controller.abort();
    signal.addEventListener('abort', forward, { once: true });
    const set = this.inRequest.get(principal) ?? new Set();
    set.add(controller);
    this.inRequest.set(principal, set);
    return {
      signal: controller.signal,
      done: () => {
        signal.removeEventListener('abort', forward);
        set.delete(controller);
        if (set.size === 0) this.inRequest.delete(principal);
      },
    };
  }

  /** Cancels every call of a principal (a revoked client); how many were running. */
  cancelPrincipal(principal: string): number {
    let n = 0;
    for (const controller of this.inRequest.get(principal) ?? []) {
      controller.abort();
      n++;
    }
    this.inRequest.delete(principal);
    for (const entry of this.calls.values()) {
      if (entry.principal !== principal) continue;
      if (entry.state.kind !== 'done') n++;
      this.cancel(entry);
      this.drop(entry);
    }
    return n;
  }

  /** Calls running or kept. */
  get size(): number {
    return this.calls.size;
  }

  /** Cancels every call: the server stops. */
  close(): void {
    for (const entry of [...this.calls.values()]) {
      this.cancel(entry);
      this.drop(entry);
    }
  }

  private finish(entry: Entry, outcome: CallOutcome): void {
    this.set(entry, { kind: 'done', outcome });
    if (entry.kept) this.expireLater(entry);
    else this.drop(entry);
  }

  private expireLater(entry: Entry): void {
    entry.expiry = setTimeout(() => this.drop(entry), this.keepDoneMs);
    entry.expiry.unref();
  }

  private set(entry: Entry, state: CallState): void {
    entry.state = state;
    entry.lastUpdatedAt = Date.now();
    for (const wake of [...entry.changed]) wake();
  }

  private drop(entry: Entry): void {
    clearTimeout(entry.expiry);
    if (this.calls.get(entry.id) === entry) this.calls.delete(entry.id);
  }

  /**
   * Past `maxPerPrincipal`, the principal's oldest finished calls are forgotten; when all of
   * them still run, the new call is refused.
   */
  private makeRoom(principal: string): void {
    const mine = [...this.calls.values()].filter((e) => e.principal === principal);
    let over = mine.length - this.maxPerPrincipal + 1;
    for (const e of mine) {
      if (over <= 0) return;
      if (e.state.kind === 'done') {
        this.drop(e);
        over--;
      }
    }
    if (over > 0)
      throw new PaddockError(
        'LIMIT_EXCEEDED',
        `This client already has ${mine.length} calls waiting or running in the background; wait for some to finish (or cancel their tasks) and retry.`,
        { max: this.maxPerPrincipal },
      );
  }
}

function current(entry: Entry): Settled | null {
  const s = entry.state;
  if (s.kind === 'done') return { kind: 'done', outcome: s.outcome };
  if (s.kind === 'input') return { kind: 'input', prompt: s.prompt, key: s.key };
  return null;
}
