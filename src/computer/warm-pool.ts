/**
 * The warm pool: per profile, up to `warm` sandboxes booted to the guest agent's hello and
 * holding nothing of any computer. A launch of a fresh-workspace computer takes one (it is then
 * that generation's alone and dies with it: a sandbox never returns to the pool) and the pool
 * refills in the background, one boot at a time per profile. A boot that fails is logged and
 * retried with backoff; a launch that finds no warm sandbox boots cold, so the pool never breaks
 * a launch.
 *
 * A pooled sandbox is generic: a name of its own (`warm-XXXXXX`, its hostname and host
 * directories), an empty workspace made for it, the profile's mounts and limits, the agent's base
 * environment, and the server's egress trust bundle. Everything that names a computer (the
 * generation number, job environments, egress credentials, startup scripts) is bound when a
 * generation takes it.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { basename, join } from 'node:path';
import type { ProfileConfig } from '../config/computer-schema.js';
import type { Logger } from '../shared/logger.js';
import type { ComputerBackend, SandboxImage } from './backend/types.js';
import { type BootedSandbox, bootSandbox, sandboxSpec } from './generation/boot.js';

/** Host directories of pooled sandboxes are `<dir>/warm-XXXXXX`. */
export const WARM_DIR_PATTERN = /^warm-[A-Za-z0-9]{6}$/;

export interface WarmPoolOptions {
  backend: ComputerBackend;
  logger: Logger;
  /** Directory that holds each pooled sandbox's own host directory. */
  dir: string;
  bootTimeoutMs: number;
  /** Profiles (with the server's shared mounts) and how many warm sandboxes each keeps. */
  targets: { profile: ProfileConfig; warm: number }[];
  /** Files every sandbox gets (the egress proxy's trust bundle). */
  files(): Record<string, string | Uint8Array>;
  /** The image a profile's sandboxes boot from (absent: the host's directories). */
  image?(profile: ProfileConfig): SandboxImage | undefined;
  /** Whether one more sandbox fits under the server's cap, given the pool's `pooled` (ready or booting). */
  room(pooled: number): boolean;
  /** First retry delay after a failed boot and the longest (default 1 s and 60 s). */
  retryMs?: { first: number; max: number };
}

interface Slot {
  profile: ProfileConfig;
  warm: number;
  ready: BootedSandbox[];
  booting: boolean;
  failures: number;
  retry: NodeJS.Timeout | null;
}

export class WarmPool {
  private readonly slots = new Map<string, Slot>();
  private readonly inFlight = new Set<Promise<void>>();
  private closed = false;

  constructor(private readonly options: WarmPoolOptions) {
    for (const { profile, warm } of options.targets) {
      if (warm > 0)
        this.slots.set(profile.id, { profile, warm, ready: [], booting: false, failures: 0, retry: null });
    }
  }

  /** Starts filling every profile's pool. */
  start(): void {
    this.refill();
  }

  /** Whether `profileId` keeps warm sandboxes at all. */
  keeps(profileId: string): boolean {
    return this.slots.has(profileId);
  }

  /** Warm sandboxes ready for `profileId` (all profiles when omitted). */
  ready(profileId?: string): number {
    if (profileId !== undefined) return this.slots.get(profileId)?.ready.length ?? 0;
    let n = 0;
    for (const s of this.slots.values()) n += s.ready.length;
    return n;
  }

  /** Sandboxes the pool holds: ready or booting (what counts against the server's cap). */
  get size(): number {
    let n = 0;
    for (const s of this.slots.values()) n += s.ready.length + (s.booting ? 1 : 0);
    return n;
  }

  /** Host pids of the ready sandboxes (diagnostics and tests). */
  hostPids(): number[] {
    return [...this.slots.values()].flatMap((s) => s.ready.map((b) => b.instance.hostPid));
  }

  /** A ready sandbox of `profileId`, now the caller's alone; null when none is ready. Refills. */
  take(profileId: string): BootedSandbox | null {
    const slot = this.slots.get(profileId);
    const sandbox = slot?.ready.shift() ?? null;
    if (slot && sandbox) {
      this.options.logger.info('computer.warm_take', { profile: profileId, ready: slot.ready.length });
      // after the taker counts as a computer, so the refill sees the cap as it is
      setImmediate(() => this.fill(slot));
    }
    return sandbox;
  }

  /** Destroys one ready sandbox (to make room under the cap for a cold boot); false when none. */
  async evict(): Promise<boolean> {
    const slot = [...this.slots.values()]
      .filter((s) => s.ready.length > 0)
      .sort((a, b) => b.ready.length - a.ready.length)[0];
    const sandbox = slot?.ready.pop();
    if (!slot || !sandbox) return false;
    this.options.logger.info('computer.warm_evict', { profile: slot.profile.id });
    await sandbox.destroy();
    return true;
  }

  /** Boots what is missing in every profile's pool (e.g. after a computer stopped and freed room). */
  refill(): void {
    for (const slot of this.slots.values()) this.fill(slot);
  }

  /** Stops refilling: nothing boots from now on (the server is shutting down). */
  close(): void {
    this.closed = true;
    for (const slot of this.slots.values()) {
      if (slot.retry) clearTimeout(slot.retry);
      slot.retry = null;
    }
  }

  /** Stops refilling and destroys every pooled sandbox, waiting for boots under way. */
  async drain(): Promise<void> {
    this.close();
    const sandboxes: BootedSandbox[] = [];
    for (const slot of this.slots.values()) sandboxes.push(...slot.ready.splice(0));
    await Promise.all([...sandboxes.map((s) => s.destroy()), ...this.inFlight]);
  }

  private fill(slot: Slot): void {
    if (this.closed || slot.booting || slot.retry || slot.ready.length >= slot.warm) return;
    if (!this.options.room(this.size)) return;
    slot.booting = true;
    const boot = this.bootOne(slot).finally(() => {
      slot.booting = false;
      this.inFlight.delete(boot);
      if (!slot.retry) this.fill(slot);
    });
    this.inFlight.add(boot);
  }

  private async bootOne(slot: Slot): Promise<void> {
    const { logger } = this.options;
    const hostDir = mkdtempSync(join(this.options.dir, 'warm-'));
    const name = basename(hostDir);
    try {
      const sandbox = await bootSandbox(
        this.options.backend,
        sandboxSpec(
          slot.profile,
          { generation: 0, hostDir, name },
          this.options.files(),
          this.options.image?.(slot.profile),
        ),
        { timeoutMs: this.options.bootTimeoutMs },
      );
      if (this.closed) {
        await sandbox.destroy();
        return;
      }
      slot.failures = 0;
      slot.ready.push(sandbox);
      void sandbox.instance.exited.then(() => this.lost(slot, sandbox));
      logger.info('computer.warm_ready', {
        profile: slot.profile.id,
        sandbox: name,
        bootMs: sandbox.bootMs,
        ready: slot.ready.length,
      });
    } catch (e) {
      rmSync(hostDir, { recursive: true, force: true });
      if (this.closed) return;
      this.retryLater(slot, (e as Error).message);
    }
  }

  /** A pooled sandbox ended on its own: it leaves the pool and a new one boots after a pause. */
  private lost(slot: Slot, sandbox: BootedSandbox): void {
    const i = slot.ready.indexOf(sandbox);
    if (i < 0) return;
    slot.ready.splice(i, 1);
    void sandbox.destroy();
    if (!this.closed) this.retryLater(slot, 'the warm sandbox exited while pooled');
  }

  private retryLater(slot: Slot, error: string): void {
    const { first, max } = this.options.retryMs ?? { first: 1000, max: 60_000 };
    slot.failures++;
    const retryMs = Math.min(max, first * 2 ** (slot.failures - 1));
    this.options.logger.warn('computer.warm_failed', { profile: slot.profile.id, error, retryMs });
    if (slot.retry) clearTimeout(slot.retry);
    slot.retry = setTimeout(() => {
      slot.retry = null;
      this.fill(slot);
    }, retryMs);
    slot.retry.unref();
  }
}
