/**
 * The ComputerService: every computer of the server. A caller acts on a named computer (shared
 * by every session naming it) or on the private computer of its owner (an MCP session, an agent
 * run…); each is a ComputerManager, created on first use. The service adds what spans
 * computers: the cap on running computers, idle stops, the release of a session's private
 * computer and the computer the dock watches.
 */
import { computerNameProblem } from '../shared/computer-name.js';
import type { Disposable } from '../shared/disposable.js';
import { PaddockError } from '../shared/errors.js';
import { principalKey } from '../shared/principal.js';
import type { LaunchLinkStore } from '../store/launch-links.js';
import type { CallerContext, ComputerRef } from '../tools/tool.js';
import type { CheckpointStore } from './checkpoints/store.js';
import type { ComputerEvent } from './events.js';
import { type CancelResult, ComputerManager } from './manager.js';
import { ComputerPrincipals } from './principals.js';
import type { ProfileCatalog, ProfileInfo } from './profiles.js';
import { ComputerContext, type ComputerServiceOptions } from './service-context.js';
import type { WarmPool } from './warm-pool.js';

export type { ComputerServiceOptions } from './service-context.js';

/** One computer as `paddock status` lists it. */
export interface ComputerSummary {
  [key: string]: unknown;
  name: string;
  generation: number | null;
  profileId: string | null;
  lifecycle: string;
  idleMs: number;
  workspace: 'keep' | 'fresh';
}

/** What {@link ComputerService.endPrincipal} ended. */
export interface PrincipalEnded {
  jobs: { jobId: string; status: CancelResult['status'] | 'gone' }[];
  /** Tool channels closed (each refuses every later call). */
  channels: number;
  /** Jobs whose egress proxy credentials were withdrawn. */
  egressCredentials: number;
  /** Private computers stopped and forgotten. */
  computers: string[];
}

/** Generations whose computer the service remembers. */
const MAX_REMEMBERED_GENERATIONS = 10_000;

export class ComputerService {
  private readonly context: ComputerContext;
  private readonly managers = new Map<string, ComputerManager>();
  private readonly lastUsed = new Map<string, number>();
  private readonly timers = new Map<string, NodeJS.Timeout>();
  private focus: string | null = null;
  private readonly generations = new Map<number, string>();
  /** Who holds which computer and job, and the quotas over them. */
  readonly principals: ComputerPrincipals;

  constructor(private readonly options: ComputerServiceOptions) {
    this.principals = new ComputerPrincipals(options.quotas);
    this.context = new ComputerContext(options, {
      assertCapacity: (key) => this.assertCapacity(key),
      launched: (key) => this.setFocus(key),
      activeComputers: () => [...this.managers.values()].filter((m) => m.active).length,
      reserveJob: (caller, key) => this.principals.reserveJob(caller, key),
    });
    this.context.events.on((event) => {
      if (event.type === 'job.exited') this.principals.jobExited(event.jobId);
      if (event.type !== 'lifecycle' || this.generations.get(event.generation) === event.computer) return;
      this.generations.set(event.generation, event.computer);
      // a bounded memory of which computer ran which generation (for the dock's filters)
      if (this.generations.size > MAX_REMEMBERED_GENERATIONS)
        this.generations.delete(this.generations.keys().next().value as number);
    });
    options.logger.info('computer.service', { backend: options.backend.name });
  }

  get profiles(): ProfileCatalog {
    return this.context.profiles;
  }

  /** The warm pool (its state for status and tests). */
  get pool(): WarmPool {
    return this.context.pool;
  }

  get launchLinks(): LaunchLinkStore | null {
    return this.context.launchLinks;
  }

  /** Typed events of every computer until disposed. */
  subscribe(listener: (event: ComputerEvent) => void): Disposable {
    return this.context.events.on(listener);
  }

  /** Sets the dock's base URL once the server knows it (it may listen on a port picked at start). */
  setDockUrl(url: string): void {
    this.context.setDockUrl(url);
  }

  /** The dock's URL for this server. */
  get dockUrl(): string {
    return this.context.dockUrl();
  }

  listProfiles(search?: string): ProfileInfo[] {
    return this.context.profiles.list(search);
  }

  /** The key of the computer `caller` acts on: `named:<name>` or `private:<owner>`. */
  keyOf(caller: CallerContext): string {
    return caller.computer ? this.keyOfRef(caller.computer) : `private:${caller.onBehalfOf ?? caller.caller}`;
  }

  /** The key of a reference. */
  keyOfRef(ref: ComputerRef): string {
    return ref.kind === 'named' ? `named:${ref.name}` : `private:${ref.owner}`;
  }

  /** The reference of a key (what a caller names to act on that computer). */
  refOf(key: string): ComputerRef {
    return key.startsWith('named:')
      ? { kind: 'named', name: key.slice('named:'.length) }
      : { kind: 'private', owner: key.slice('private:'.length) };
  }

  /**
   * The computer `caller` acts on (created on first use); each use counts as activity. A
   * computer the caller's principal may not reach is NOT_FOUND (see ComputerPrincipals).
   */
  for(caller: CallerContext): ComputerManager {
    const key = this.keyOf(caller);
    this.principals.admit(caller, key);
    return this.byKey(key);
  }

  /** Named computer `name` as `caller` may reach it (created on first use); NOT_FOUND beyond its principal. */
  named(caller: CallerContext, name: string): ComputerManager {
    const problem = computerNameProblem(name);
    if (problem) throw new PaddockError('INVALID_ARGUMENT', problem);
    const key = `named:${name}`;
    this.principals.admit(caller, key);
    return this.byKey(key);
  }

  /** The computer with this key (created on first use); each use counts as activity. */
  byKey(key: string): ComputerManager {
    let manager = this.managers.get(key);
    if (!manager) {
      manager = new ComputerManager(key, this.context);
      this.managers.set(key, manager);
    }
    this.touch(key);
    return manager;
  }

  /** The computer the dock watches: the one launched last (null before any launch). */
  watched(): ComputerManager | null {
    return this.focus ? (this.managers.get(this.focus) ?? null) : null;
  }

  /** The key of the computer the dock watches, or null. */
  watching(): string | null {
    return this.focus;
  }

  /** Makes the dock watch computer `name` (a listed key or a named computer's name). */
  watch(name: string): void {
    const key = this.keyOfName(name);
    if (!this.managers.has(key))
      throw new PaddockError('NOT_FOUND', `No computer "${name}" on this server; pick one from the list.`);
    this.setFocus(key);
  }

  /** The computer that ran `generation` in this server's lifetime, or null. */
  computerOf(generation: number): string | null {
    return this.generations.get(generation) ?? null;
  }

  private setFocus(key: string): void {
    if (this.focus === key) return;
    this.focus = key;
    this.context.events.emit({ type: 'watch', computer: key });
  }

  /** Every computer, for status listings. */
  list(): ComputerSummary[] {
    const now = Date.now();
    return [...this.managers.values()].map((m) => {
      const c = m.computer;
      return {
        name: m.name,
        generation: c?.generation ?? null,
        profileId: c?.profile.id ?? null,
        lifecycle: c?.lifecycle ?? 'none',
        idleMs: now - (this.lastUsed.get(m.name) ?? now),
        workspace: c ? this.context.workspaceMode(m.name, c.profile) : 'fresh',
      };
    });
  }

  /**
   * The owner (`mcp:<session>`, `agent:<run>`) is gone: its private computer is stopped and
   * forgotten after `computer.sessionGraceMs`, unless it is used again before.
   */
  releaseOwner(owner: string): void {
    const key = `private:${owner}`;
    if (!this.managers.has(key)) return;
    const grace = this.options.config.sessionGraceMs;
    const released = this.lastUsed.get(key);
    this.setTimer(key, grace, () => {
      if (this.lastUsed.get(key) === released) void this.forget(key, `its owner ${owner} ended`);
    });
  }

  /**
   * The key of a computer as a person names it: a listed key (`named:x`, `private:mcp:…`), or
   * the bare name of a named computer.
   */
  keyOfName(name: string): string {
    return name.startsWith('named:') || name.startsWith('private:') ? name : `named:${name}`;
  }

  /**
   * Where computer `name`'s checkpoints are kept, and its manager when the server holds one (none
   * is made for a computer that has only checkpoints on disk, e.g. after a restart).
   */
  checkpointsOf(name: string): { store: CheckpointStore; key: string; manager: ComputerManager | null } {
    const key = this.keyOfName(name);
    return {
      store: this.context.checkpoints,
      key: this.context.checkpointKey(key),
      manager: this.managers.get(key) ?? null,
    };
  }

  /** Stops computer `name` (`paddock computers stop`); false when it was not running. */
  async stopComputer(name: string): Promise<boolean> {
    const manager = this.managers.get(this.keyOfName(name));
    if (!manager?.active) return false;
    manager.log.add('info', 'computer.stop', `${manager.name} stopped by the operator.`, {
      generation: manager.computer?.generation,
    });
    await manager.stop(
      new PaddockError(
        'NOT_RUNNING',
        'The operator stopped this computer (paddock computers stop); launch it again.',
      ),
    );
    return true;
  }

  /** Stops and forgets computer `name` (`paddock computers rm`); false when the server knew none. */
  async removeComputer(name: string): Promise<boolean> {
    const key = this.keyOfName(name);
    if (!this.managers.has(key)) return false;
    await this.forget(key, 'the operator removed it (paddock computers rm)');
    return true;
  }

  /** Stops every computer and frees the backend. */
  async close(): Promise<void> {
    this.context.close();
    for (const timer of this.timers.values()) clearTimeout(timer);
    this.timers.clear();
    const reason = new PaddockError('NOT_RUNNING', 'The server is shutting down.');
    await Promise.all([...this.managers.values()].map((m) => m.stop(reason)));
    this.managers.clear();
    this.context.checkpoints.close();
    await this.context.drainPool();
    await this.options.backend.dispose();
  }

  /** Activity on a computer: its idle stop moves to `idleTimeoutMs` from now. */
  private touch(key: string): void {
    this.lastUsed.set(key, Date.now());
    const idle = this.options.config.idleTimeoutMs;
    if (idle > 0 && !this.context.closed) this.setTimer(key, idle, () => void this.idleStop(key, idle));
  }

  private setTimer(key: string, ms: number, fire: () => void): void {
    clearTimeout(this.timers.get(key));
    const timer = setTimeout(() => {
      this.timers.delete(key);
      fire();
    }, ms);
    timer.unref();
    this.timers.set(key, timer);
  }

  private async idleStop(key: string, idleMs: number): Promise<void> {
    const manager = this.managers.get(key);
    if (!manager?.active) return;
    manager.log.add('info', 'computer.idle_stop', `${key} stopped after ${idleMs} ms without activity.`, {
      generation: manager.computer?.generation,
    });
    await manager.stop(
      new PaddockError(
        'NOT_RUNNING',
        `The computer was stopped after ${idleMs} ms without activity (computer.idleTimeoutMs); launch it again with launch_computer.`,
      ),
    );
  }

  private async forget(key: string, why: string): Promise<void> {
    const manager = this.managers.get(key);
    if (!manager) return;
    this.managers.delete(key);
    this.lastUsed.delete(key);
    clearTimeout(this.timers.get(key));
    this.timers.delete(key);
    if (this.focus === key) this.focus = null;
    this.principals.forget(key);
    manager.log.add('info', 'computer.release', `${key} released: ${why}.`);
    await manager.stop(
      new PaddockError('NOT_FOUND', `This computer was released (${why}); launch a new one.`),
    );
  }

  /**
   * Ends everything principal `who` (a revoked client) has running: each job's tool channel is
   * closed with `reason` at once, its egress credentials withdrawn and the job cancelled; then
   * its private computers are stopped and forgotten. What was ended.
   */
  async endPrincipal(who: string, reason: PaddockError): Promise<PrincipalEnded> {
    const jobs = this.principals.jobsOf(who);
    const managers = jobs.map((j) => this.managers.get(j.computer));
    let channels = 0;
    // every channel refuses before any cancel is awaited
    for (const [i, j] of jobs.entries()) {
      const c = managers[i]?.computer;
      const job = c?.jobs.list().find((x) => x.id === j.jobId);
      if (c && job && c.jobs.closeChannel(job, reason)) channels++;
    }
    let egress = 0;
    const ended = await Promise.all(
      jobs.map(async (j, i) => {
        const result = await managers[i]?.revokeJob(j.jobId, reason).catch(() => null);
        if (result?.egress) egress++;
        return { jobId: j.jobId, status: result?.cancel.status ?? ('gone' as const) };
      }),
    );
    const computers = this.principals.computersOf(who);
    await Promise.all(computers.map((key) => this.forget(key, 'its client was revoked')));
    return { jobs: ended, channels, egressCredentials: egress, computers };
  }

  private assertCapacity(key: string): void {
    const max = this.options.config.maxComputers;
    const running = [...this.managers.values()].filter((m) => m.active && m.name !== key);
    const own = this.principals.capacityProblem(
      key,
      running.map((m) => m.name),
      max,
    );
    if (own) throw own;
    if (running.length < max) return;
    // only computers of the same principal are named: a refusal never lists another's
    const mine = running.filter((m) => sameHolder(this.principals, m.name, key));
    const names = mine.slice(0, 5).map((m) => m.name);
    const which = names.length > 0 ? ` (yours: ${names.join(', ')}${mine.length > 5 ? ', …' : ''})` : '';
    throw new PaddockError(
      'LIMIT_EXCEEDED',
      `This server already runs ${running.length} computers, its limit computer.maxComputers (${max}). Stop one first — end a session that holds one, or let one go idle${which} — or raise computer.maxComputers.`,
      { limit: 'computer.maxComputers', max, running: running.length },
    );
  }
}

/** Whether computers `a` and `b` have the same holder. */
function sameHolder(principals: ComputerPrincipals, a: string, b: string): boolean {
  return principalKey(principals.holderOf(a)) === principalKey(principals.holderOf(b));
}
