/**
 * Control groups for computers and jobs (needs root or a delegated subtree).
 *
 * Each computer is a node and each job a child node, present in every writable hierarchy:
 * the cgroup2 tree gives an atomic `cgroup.kill` and a `populated` flag (a whole process family,
 * whatever it does with sessions and process groups); v1 `pids`, `memory` and `cpu` (or their
 * cgroup2 files when the controllers are enabled there) give limits and CPU fairness; v1
 * `freezer` is the kill mechanism when there is no cgroup2 tree. Nodes nest under the server's
 * own cgroup in each hierarchy, so Paddock never touches anybody else's groups.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, rmdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { sleep } from '../../../shared/abort.js';
import type { Logger } from '../../../shared/logger.js';
import {
  discover,
  type Hierarchy,
  type Kind,
  pidsOfTree,
  readSafe,
  tryRmdir,
  tryWrite,
} from './cgroup-files.js';
import { sweepStale } from './cgroup-sweep.js';

/** Limits of one node; absent fields stay unlimited. */
export interface CgroupLimits {
  pidsMax?: number;
  memoryBytes?: number;
}

/** One group (a computer or a job) across every hierarchy Paddock can write. */
export class CgroupNode {
  private readonly children = new Set<CgroupNode>();

  constructor(
    readonly dirs: ReadonlyMap<Kind, string>,
    private readonly parent: CgroupNode | null,
  ) {}

  /** Every `cgroup.procs` file a new member must be written to. */
  procsFiles(): string[] {
    return [...this.dirs.values()].map((d) => join(d, 'cgroup.procs'));
  }

  /** Moves a host process into this group (in every hierarchy). */
  addProcess(hostPid: number): void {
    for (const file of this.procsFiles()) writeFileSync(file, String(hostPid));
  }

  /** A child group with its own limits. */
  child(name: string, limits: CgroupLimits): CgroupNode {
    const dirs = new Map<Kind, string>();
    for (const [kind, dir] of this.dirs) {
      const path = join(dir, name);
      mkdirSync(path);
      dirs.set(kind, path);
    }
    applyLimits(dirs, limits);
    const node = new CgroupNode(dirs, this);
    this.children.add(node);
    return node;
  }

  /** Host pids of every process in this group and its children. */
  pids(): number[] {
    const dir = this.dirs.get('unified') ?? this.dirs.get('pids') ?? [...this.dirs.values()][0];
    return dir ? pidsOfTree(dir) : [];
  }

  /** True when no process is left in this group or below. */
  isEmpty(): boolean {
    const unified = this.dirs.get('unified');
    if (unified) {
      const events = readSafe(join(unified, 'cgroup.events'));
      if (events !== null) return /populated 0/.test(events);
    }
    return this.pids().length === 0;
  }

  /** Sends SIGKILL to every process of the group, atomically with respect to forks. */
  async kill(): Promise<void> {
    const unified = this.dirs.get('unified');
    if (unified && tryWrite(join(unified, 'cgroup.kill'), '1')) return;
    const freezer = this.dirs.get('freezer');
    if (freezer) {
      await this.killFrozen(freezer);
      return;
    }
    for (const pid of this.pids()) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // Gone already.
      }
    }
  }

  /**
   * Stops every process of the group and below where it stands (cgroup2 `cgroup.freeze`, else the
   * v1 freezer) and waits until the kernel says they all are, at most `timeoutMs`. Returns the
   * thaw, or null when the group cannot be frozen (the caller goes on without a pause).
   */
  async freeze(timeoutMs = 1000): Promise<(() => void) | null> {
    const unified = this.dirs.get('unified');
    if (unified && tryWrite(join(unified, 'cgroup.freeze'), '1')) {
      const thaw = () => void tryWrite(join(unified, 'cgroup.freeze'), '0');
      if (await until(() => /frozen 1/.test(readSafe(join(unified, 'cgroup.events')) ?? ''), timeoutMs))
        return thaw;
      thaw();
      return null;
    }
    const freezer = this.dirs.get('freezer');
    if (freezer && tryWrite(join(freezer, 'freezer.state'), 'FROZEN')) {
      const thaw = () => void tryWrite(join(freezer, 'freezer.state'), 'THAWED');
      if (await until(() => (readSafe(join(freezer, 'freezer.state')) ?? '').trim() === 'FROZEN', timeoutMs))
        return thaw;
      thaw();
      return null;
    }
    return null;
  }

  /** Kills, waits until empty (or `timeoutMs`), then removes the group and its children. */
  async destroy(timeoutMs = 2000): Promise<boolean> {
    if (!this.isEmpty()) {
      await this.kill();
      if (!(await this.waitEmpty(timeoutMs))) return false;
    }
    for (const child of [...this.children]) await child.destroy(timeoutMs);
    for (const dir of this.dirs.values()) {
      try {
        rmdirSync(dir);
      } catch {
        // Retried by the parent's removal or left for the next start's sweep.
      }
    }
    this.parent?.children.delete(this);
    return true;
  }

  /** Polls until no process is left, with a deadline. */
  async waitEmpty(timeoutMs: number): Promise<boolean> {
    const deadline = Date.now() + timeoutMs;
    let delayMs = 2;
    while (!this.isEmpty()) {
      if (Date.now() >= deadline) return false;
      await sleep(delayMs);
      delayMs = Math.min(delayMs * 2, 50);
    }
    return true;
  }

  private async killFrozen(freezer: string): Promise<void> {
    const state = join(freezer, 'freezer.state');
    for (let round = 0; round < 20 && this.pids().length > 0; round++) {
      tryWrite(state, 'FROZEN');
      for (let i = 0; i < 100 && !/FROZEN/.test(readSafe(state) ?? 'FROZEN'); i++) {
        await sleep(2);
      }
      for (const pid of this.pids()) {
        try {
          process.kill(pid, 'SIGKILL');
        } catch {
          // Gone already.
        }
      }
      tryWrite(state, 'THAWED');
      await sleep(5);
    }
  }
}

/** Polls `check` (1, 2, 4… ms apart, at most 20) until it holds or `timeoutMs` passed. */
async function until(check: () => boolean, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  let delayMs = 1;
  while (!check()) {
    if (Date.now() >= deadline) return false;
    await sleep(delayMs);
    delayMs = Math.min(delayMs * 2, 20);
  }
  return true;
}

function applyLimits(dirs: ReadonlyMap<Kind, string>, limits: CgroupLimits): void {
  const pids = dirs.get('pids');
  const memory = dirs.get('memory');
  const unified = dirs.get('unified');
  if (limits.pidsMax !== undefined) {
    if (pids) writeFileSync(join(pids, 'pids.max'), String(limits.pidsMax));
    else if (unified && existsSync(join(unified, 'pids.max')))
      writeFileSync(join(unified, 'pids.max'), String(limits.pidsMax));
  }
  if (limits.memoryBytes !== undefined) {
    if (memory) {
      writeFileSync(join(memory, 'memory.limit_in_bytes'), String(limits.memoryBytes));
      tryWrite(join(memory, 'memory.memsw.limit_in_bytes'), String(limits.memoryBytes));
    } else if (unified && existsSync(join(unified, 'memory.max'))) {
      writeFileSync(join(unified, 'memory.max'), String(limits.memoryBytes));
      tryWrite(join(unified, 'memory.swap.max'), '0');
    }
  }
}

/** What the host can do with cgroups, found once at start-up. */
export interface CgroupSupport {
  /** Whether process families can be killed as a whole (cgroup2 kill or v1 freezer). */
  familyKill: boolean;
  /** Which limits are enforced: `pids`, `memory`, `cpu`. */
  limits: string[];
}

/**
 * The root of Paddock's groups for one server process. `create` returns null when no
 * hierarchy is writable (not root and no delegation): callers fall back to rlimits.
 */
export class CgroupRoot {
  private constructor(
    private readonly root: CgroupNode,
    readonly support: CgroupSupport,
  ) {}

  static create(logger: Logger): CgroupRoot | null {
    if (process.platform !== 'linux') return null;
    let hierarchies: Hierarchy[];
    try {
      hierarchies = discover();
    } catch {
      return null;
    }
    const name = `paddock-${process.pid}-${randomBytes(3).toString('hex')}`;
    const dirs = new Map<Kind, string>();
    for (const h of hierarchies) {
      if (dirs.has(h.kind)) continue;
      sweepStale(h.own, h.kind, logger);
      const dir = join(h.own, name);
      try {
        mkdirSync(dir);
      } catch {
        continue;
      }
      if (h.kind === 'unified') {
        const wanted = ['pids', 'memory'].filter((c) => h.controllers?.has(c));
        if (wanted.length > 0)
          tryWrite(join(dir, 'cgroup.subtree_control'), wanted.map((c) => `+${c}`).join(' '));
      }
      dirs.set(h.kind, dir);
    }
    const hasKill = dirs.has('unified') && existsSync(join(dirs.get('unified')!, 'cgroup.kill'));
    const support: CgroupSupport = {
      familyKill: hasKill || dirs.has('freezer'),
      limits: [
        dirs.has('pids') || existsSync(join(dirs.get('unified') ?? '/nonexistent', 'pids.max')) ? 'pids' : '',
        dirs.has('memory') || existsSync(join(dirs.get('unified') ?? '/nonexistent', 'memory.max'))
          ? 'memory'
          : '',
        dirs.has('cpu') ? 'cpu' : '',
      ].filter(Boolean),
    };
    if (!support.familyKill) {
      for (const dir of dirs.values()) tryRmdir(dir);
      logger.warn('computer.cgroups_unavailable', {
        reason: 'no writable cgroup2 tree or freezer hierarchy',
      });
      return null;
    }
    if (!hasKill) dirs.delete('unified');
    return new CgroupRoot(new CgroupNode(dirs, null), support);
  }

  /** A group for one computer. */
  computer(name: string, limits: CgroupLimits): CgroupNode {
    return this.root.child(name, limits);
  }

  /** Kills everything and removes Paddock's groups. */
  async dispose(): Promise<void> {
    await this.root.destroy();
  }
}
