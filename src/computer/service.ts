/**
 * The ComputerService: every computer of the server. A caller acts on a named computer (shared
 * by every session naming it) or on the private computer of its owner (an MCP session, an agent
 * run…); each is a ComputerManager, created on first use. The service adds what spans
 * computers: the cap on running computers, idle stops, the release of a session's private
 * computer and the computer the dock watches.
 */
import type { Disposable } from '../shared/disposable.js';
import { PaddockError } from '../shared/errors.js';
import type { LaunchLinkStore } from '../store/launch-links.js';
import type { CallerContext, ComputerRef } from '../tools/tool.js';
import type { ComputerEvent } from './events.js';
import { ComputerManager } from './manager.js';
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

/** Generations whose computer the service remembers. */
const MAX_REMEMBERED_GENERATIONS = 10_000;

export class ComputerService {
  private readonly context: ComputerContext;
  private readonly managers = new Map<string, ComputerManager>();
  private readonly lastUsed = new Map<string, number>();
  private readonly timers = new Map<string, NodeJS.Timeout>();
  private focus: string | null = null;
  private readonly generations = new Map<number, string>();

  constructor(private readonly options: ComputerServiceOptions) {
    this.context = new ComputerContext(options, {
      assertCapacity: (key) => this.assertCapacity(key),
      launched: (key) => this.setFocus(key),
      activeComputers: () => [...this.managers.values()].filter((m) => m.active).length,
    });
    this.context.events.subscribe((event) => {
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
    return this.context.events.subscribe(listener);
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

  /** The computer `caller` acts on (created on first use); each use counts as activity. */
  for(caller: CallerContext): ComputerManager {
    return this.byKey(this.keyOf(caller));
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
    manager.log.add('info', 'computer.release', `${key} released: ${why}.`);
    await manager.stop(
      new PaddockError('NOT_FOUND', `This computer was released (${why}); launch a new one.`),
    );
  }

  private assertCapacity(key: string): void {
    const max = this.options.config.maxComputers;
    const running = [...this.managers.values()].filter((m) => m.active && m.name !== key);
    if (running.length < max) return;
    const names = running.slice(0, 5).map((m) => m.name);
    throw new PaddockError(
      'LIMIT_EXCEEDED',
      `This server already runs ${running.length} computers, its limit computer.maxComputers (${max}). Stop one first — end a session that holds one, or let one go idle (${names.join(', ')}${running.length > 5 ? ', …' : ''}) — or raise computer.maxComputers.`,
      { limit: 'computer.maxComputers', max, running: running.length },
    );
  }
}
