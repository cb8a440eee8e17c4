/**
 * One running bwrap sandbox as the computer sees it: its stdio, how its limits are enforced,
 * its jobs' cgroups, and a teardown that leaves nothing behind (processes, cgroups, the
 * generation's directory; the disk's mount and loop device go with the sandbox's namespace).
 */
import type { ChildProcess } from 'node:child_process';
import { rmSync } from 'node:fs';
import { sleep } from '../../../shared/abort.js';
import { PaddockError } from '../../../shared/errors.js';
import type { Logger } from '../../../shared/logger.js';
import type { JobFamily, JobRlimits, SandboxImage, SandboxInstance, SandboxSpec } from '../types.js';
import { sandboxName } from './args.js';
import type { CgroupNode } from './cgroups.js';
import { findDescendantByInnerPid } from './proc.js';
import type { DiskQuota } from './workspace.js';

const MIB = 1024 * 1024;

/** Splits a limit into the share one job's family may use and the reserve kept for the rest. */
function jobShare(total: number, reserveCap: number, floor: number): number {
  return Math.max(floor, total - Math.min(reserveCap, Math.floor(total / 4)));
}

/** What a BwrapInstance is built from. */
export interface BwrapInstanceParts {
  child: ChildProcess;
  exited: Promise<{ exitCode: number | null; signal: string | null }>;
  node: CgroupNode | null;
  spec: SandboxSpec;
  logger: Logger;
  hostWorkspace: string;
  rootLayer: { hostPath: string; image: SandboxImage } | null;
  diskQuota: DiskQuota;
  /** This generation's own directories, removed with it (never a kept workspace). */
  removeOnDestroy: string[];
}

export class BwrapInstance implements SandboxInstance {
  readonly fromGuest;
  readonly toGuest;
  readonly diagnostics;
  readonly familyMechanism;
  readonly jobRlimits: JobRlimits;
  readonly enforcement: Record<string, string>;
  readonly hostPid: number;
  readonly exited;
  readonly hostWorkspace: string;
  readonly rootLayer: { hostPath: string; image: SandboxImage } | null;
  readonly diskQuota: DiskQuota;
  private readonly child: ChildProcess;
  private readonly node: CgroupNode | null;
  private readonly spec: SandboxSpec;
  private readonly logger: Logger;
  private readonly removeOnDestroy: string[];
  private agentHostPid: number | null = null;
  private destroyed: Promise<void> | null = null;

  constructor(parts: BwrapInstanceParts) {
    const { child, node, spec } = parts;
    this.child = child;
    this.node = node;
    this.spec = spec;
    this.logger = parts.logger;
    this.exited = parts.exited;
    this.hostWorkspace = parts.hostWorkspace;
    this.rootLayer = parts.rootLayer;
    this.diskQuota = parts.diskQuota;
    this.removeOnDestroy = parts.removeOnDestroy;
    this.fromGuest = child.stdout!;
    this.toGuest = child.stdin!;
    this.diagnostics = child.stderr!;
    this.toGuest.on('error', () => undefined);
    this.hostPid = child.pid ?? 0;
    this.familyMechanism = node ? ('cgroup' as const) : ('session' as const);
    const { limits } = spec;
    this.jobRlimits = { openFiles: limits.openFiles, fileSizeBytes: limits.diskMb * MIB };
    if (!node) {
      this.jobRlimits.processes = limits.processes;
      this.jobRlimits.dataBytes = limits.memoryMb * MIB;
    }
    this.enforcement = {
      processes: node ? 'cgroup pids' : 'rlimit (per host user)',
      memory: node ? 'cgroup memory' : 'rlimit data',
      disk: parts.diskQuota.enforced
        ? `disk image of ${limits.diskMb} MiB (workspace and /tmp); rlimit file size`
        : `not enforced on /workspace; /tmp tmpfs of ${limits.diskMb} MiB; rlimit file size`,
      openFiles: 'rlimit',
      family: node ? 'cgroup' : 'session',
    };
  }

  async adoptJob(name: string, guestPid: number, agentGuestPid: number): Promise<JobFamily | null> {
    if (!this.node) return null;
    this.agentHostPid ??= findDescendantByInnerPid(this.hostPid, agentGuestPid, 4);
    if (!this.agentHostPid)
      throw new PaddockError(
        'INTERNAL',
        'Could not find the guest agent on the host; relaunch the computer.',
      );
    // a spare is the spawner's grandchild (spawner, waiter, spare); other jobs are the agent's children
    const hostPid = findDescendantByInnerPid(this.agentHostPid, guestPid, 3);
    if (!hostPid)
      throw new PaddockError(
        'INTERNAL',
        `Could not find job process ${guestPid} on the host; run the command again.`,
      );
    const { limits } = this.spec;
    const group = this.node.child(name, {
      pidsMax: jobShare(limits.processes, 64, 8),
      memoryBytes: jobShare(limits.memoryMb, 256, 32) * MIB,
    });
    group.addProcess(hostPid);
    return {
      name,
      kill: () => group.kill(),
      isEmpty: () => group.isEmpty(),
      waitEmpty: (timeoutMs) => group.waitEmpty(timeoutMs),
      hostPids: () => group.pids(),
      dispose: async () => {
        await group.destroy();
      },
    };
  }

  /** Freezes every process of the computer (guest agent and jobs); the thaw, or null without cgroups. */
  async pause(): Promise<(() => void) | null> {
    if (!this.node || this.destroyed) return null;
    return this.node.freeze();
  }

  destroy(): Promise<void> {
    this.destroyed ??= this.teardown();
    return this.destroyed;
  }

  private async teardown(): Promise<void> {
    if (this.node) await this.node.kill();
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill('SIGKILL');
    await Promise.race([this.exited, sleep(2000)]);
    if (this.node && !(await this.node.destroy(2000))) {
      this.logger.warn('computer.cgroup_leftover', {
        generation: this.spec.generation,
        sandbox: sandboxName(this.spec),
        pids: this.node.pids(),
      });
    }
    for (const dir of this.removeOnDestroy) rmSync(dir, { recursive: true, force: true });
  }
}
