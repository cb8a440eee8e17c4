/**
 * The local backend: one bubblewrap sandbox per computer, the guest agent inside it.
 *
 * As root, every computer and every job is a cgroup (see cgroups.ts): limits, CPU fairness and
 * whole-family kills are enforced by the kernel. Without cgroups, jobs get rlimits and a new
 * session, and a kill reaches the job's process group only (reported as `session`).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { sleep } from '../../shared/abort.js';
import { PaddockError } from '../../shared/errors.js';
import type { Logger } from '../../shared/logger.js';
import { GUEST_SCOPE_PROGRAM, GUEST_SPAWNER_PROGRAM } from '../link/guest-layout.js';
import { type BwrapLayout, buildBwrapArgs, generatedEtc, sandboxName } from './bwrap-args.js';
import { type CgroupNode, CgroupRoot } from './cgroups.js';
import { guestPackages } from './guest-packages.js';
import { canExecute, etcEntries, rootEntries } from './host-facts.js';
import { type IdMap, writeIdMaps } from './id-map.js';
import { findDescendantByInnerPid } from './proc.js';
import { RuntimeStage, reachableByAnyone } from './runtime-files.js';
import { createSandboxRoot, sweepSandboxRoots } from './sandbox-root.js';
import { scopeProgram } from './scope-program.js';
import { seccompFilter } from './seccomp.js';
import { spawnerProgram } from './spawner-program.js';
import type { ComputerBackend, JobFamily, JobRlimits, SandboxInstance, SandboxSpec } from './types.js';
import { prepareWorkspace, workspaceBindPrefix } from './workspace.js';

const MIB = 1024 * 1024;
/** The first file descriptor of the generated files handed to bwrap (0–2 stdio, 3 its options). */
const FIRST_DATA_FD = 4;
/** Default host uid of sandboxes when Paddock runs as root without cgroups. */
export const DEFAULT_SANDBOX_UID = 64_000;
/** Drops the launching shell to the sandbox uid (util-linux, present wherever bwrap is). */
const SETPRIV = '/usr/bin/setpriv';
const HOST_PATH = ['/usr/local/bin', '/usr/bin', '/bin'];

/** Options of the bwrap backend. */
export interface BwrapBackendOptions {
  logger: Logger;
  /** The bwrap executable; default `bwrap` from PATH. */
  bwrapPath?: string;
  /** Compiled guest agent directory; default dist/src/guest next to this file. */
  guestDir?: string;
  /** Use cgroups when writable (default true). False forces the rlimit fallback. */
  useCgroups?: boolean;
  /**
   * Host uid (and gid) the sandbox's guest agent runs as when Paddock runs as root; jobs and
   * terminals run as the next uid (default 64000 and 64001). Both should own nothing else.
   */
  sandboxUid?: number;
}

/** The guest agent directory of this build. */
export function defaultGuestDir(): string {
  return join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'guest');
}

/** The in-computer clients (paddock-tool, paddock_tool, the Node client) of this checkout. */
export function defaultClientsDir(): string {
  // dist/src/computer/backend → the package root
  return join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..', '..', 'clients');
}

/** Splits a limit into the share one job's family may use and the reserve kept for the rest. */
function jobShare(total: number, reserveCap: number, floor: number): number {
  return Math.max(floor, total - Math.min(reserveCap, Math.floor(total / 4)));
}

/** The bwrap backend. Create one per server; `dispose` removes its cgroups. */
export class BwrapBackend implements ComputerBackend {
  readonly name = 'bwrap';
  private readonly logger: Logger;
  private readonly bwrapPath: string;
  private readonly guestDir: string;
  private readonly cgroups: CgroupRoot | null;
  /** The unprivileged host accounts of the agent and the jobs, when not the server's own. */
  private readonly runAs: IdMap | null;
  private sandboxRoot: string | null = null;
  private readonly guestPackages = guestPackages();
  /** Bound into every sandbox where they exist: the jobs' Landlock launcher, the spares' spawner. */
  private readonly programs = Object.entries({
    [GUEST_SCOPE_PROGRAM]: scopeProgram(),
    [GUEST_SPAWNER_PROGRAM]: spawnerProgram(),
  }).filter((p): p is [string, Buffer] => p[1] !== null);
  private readonly stage = new RuntimeStage(() => this.ensureSandboxRoot());

  constructor(options: BwrapBackendOptions) {
    this.logger = options.logger;
    this.bwrapPath = options.bwrapPath ?? 'bwrap';
    this.guestDir = options.guestDir ?? defaultGuestDir();
    this.cgroups = options.useCgroups === false ? null : CgroupRoot.create(options.logger);
    const uid = options.sandboxUid ?? DEFAULT_SANDBOX_UID;
    // As root, the sandbox never runs as host uid 0: its files (setuid bits included) and its view of
    // root-only /proc entries would be root's. It runs as a dedicated uid that owns nothing else.
    this.runAs = process.getuid?.() === 0 ? { agentHostId: uid, jobHostId: uid + 1 } : null;
    // workspaces of crashed servers (only those of dead server pids)
    sweepSandboxRoots(tmpdir(), this.logger);
    if (this.runAs)
      this.logger.info('computer.sandbox_uid', {
        agentUid: uid,
        jobsUid: uid + 1,
        limits: this.cgroups ? 'cgroups' : 'rlimits (no writable cgroups)',
      });
  }

  /** What the kernel enforces for this server's computers. */
  get cgroupSupport(): { familyKill: boolean; limits: string[] } | null {
    return this.cgroups?.support ?? null;
  }

  hasProgram(name: string): boolean {
    if (name.startsWith('/')) return canExecute(name);
    return HOST_PATH.some((dir) => canExecute(join(dir, name)));
  }

  async launch(spec: SandboxSpec): Promise<SandboxInstance> {
    if (!existsSync(join(this.guestDir, 'agent.js'))) {
      throw new PaddockError(
        'INTERNAL',
        `The compiled guest agent is missing at ${this.guestDir}; run "npm run build" and launch again.`,
      );
    }
    const { workspace, kept, removeOnDestroy } = prepareWorkspace(spec, this.runAs, () =>
      this.ensureSandboxRoot(),
    );
    const shell = canExecute('/bin/bash') ? '/bin/bash' : '/bin/sh';
    const name = sandboxName(spec);
    // the network namespace keeps only lo either way; "proxy" adds the relay port (guest agent)
    const files = Object.entries({ ...generatedEtc(spec.generation, shell, name), ...spec.files });
    // Generated files reach bwrap through pipes (fd 4, 5, …): no host path to expose or traverse.
    const generated = Object.fromEntries(files.map(([target], i) => [target, FIRST_DATA_FD + i]));
    // the programs follow them
    const programFds = Object.fromEntries(
      this.programs.map(([target], i) => [target, FIRST_DATA_FD + files.length + i]),
    );
    // as the dedicated uid, bind only what that uid can reach (staged copies otherwise)
    const reach = (path: string, name: string) => (this.runAs ? this.stage.path(path, name) : path);
    const clients = existsSync(defaultClientsDir()) ? reach(defaultClientsDir(), 'clients') : null;
    const layout: BwrapLayout = {
      nodePath: reach(process.execPath, 'node'),
      guestDir: reach(this.guestDir, 'guest'),
      clientsDir: clients,
      guestPackages: this.guestPackages.map((p) => ({ ...p, dir: reach(p.dir, `packages/${p.name}`) })),
      workspace,
      generated,
      programs: programFds,
      rootEntries: rootEntries(),
      etcEntries: etcEntries(),
    };
    const filter = seccompFilter();
    // read-only mounts the sandbox uid cannot reach are copied for this generation (a snapshot)
    const mounts = spec.mounts.map((m, i) =>
      this.runAs && m.readOnly && !reachableByAnyone(m.source)
        ? { ...m, source: this.stage.snapshot(m.source, `${name}/mounts/${i}`) }
        : m,
    );
    const seccompFd = FIRST_DATA_FD + files.length + this.programs.length;
    const infoFd = seccompFd + (filter ? 1 : 0);
    if (this.runAs) layout.accounts = { infoFd, blockFd: infoFd + 1 };
    if (process.allowedNodeEnvironmentFlags.has('--disable-sigusr1'))
      layout.nodeFlags = ['--disable-sigusr1'];
    const args = buildBwrapArgs({ ...spec, mounts }, layout);
    if (filter) args.splice(args.indexOf('--'), 0, '--seccomp', String(seccompFd));
    const node = this.cgroups?.computer(name, {
      pidsMax: spec.limits.processes,
      memoryBytes: spec.limits.memoryMb * MIB,
    });
    const child = this.spawnBwrap(
      args,
      node?.procsFiles() ?? [],
      [
        ...files.map(([, content]) => Buffer.from(content)),
        ...this.programs.map(([, content]) => content),
        ...(filter ? [filter] : []),
      ],
      this.runAs ? 2 : 0,
      kept && this.runAs ? { source: kept, target: workspace } : null,
    );
    const exited = new Promise<{ exitCode: number | null; signal: string | null }>((resolve) => {
      child.once('exit', (exitCode, signal) => resolve({ exitCode, signal }));
      child.once('error', () => resolve({ exitCode: null, signal: null }));
    });
    await new Promise<void>((resolve, reject) => {
      child.once('spawn', () => resolve());
      child.once('error', (e) =>
        reject(
          new PaddockError(
            'UNSUPPORTED_CAPABILITY',
            `Could not start bubblewrap (${e.message}); install the "bubblewrap" package and launch again.`,
          ),
        ),
      );
    })
      .then(() => {
        const { runAs } = this;
        if (!runAs) return;
        const [info, block] = [child.stdio[infoFd], child.stdio[infoFd + 1]];
        return writeIdMaps(info as NodeJS.ReadableStream as never, block as never, runAs);
      })
      .catch(async (e: unknown) => {
        if (child.exitCode === null) child.kill('SIGKILL');
        await node?.destroy();
        throw e instanceof PaddockError
          ? e
          : new PaddockError(
              'INTERNAL',
              `The computer could not start: ${(e as Error).message}. Launch again.`,
            );
      });
    return new BwrapInstance(
      child,
      exited,
      node ?? null,
      spec,
      this.logger,
      kept ?? workspace,
      removeOnDestroy,
    );
  }

  async dispose(): Promise<void> {
    await this.cgroups?.dispose();
    if (this.sandboxRoot) rmSync(this.sandboxRoot, { recursive: true, force: true });
  }

  /** The server's own traversable directory for workspaces and staged runtime files. */
  private ensureSandboxRoot(): string {
    if (!this.sandboxRoot) {
      this.sandboxRoot = createSandboxRoot(tmpdir());
    }
    return this.sandboxRoot;
  }

  /** Spawns bwrap, first moving the launching shell into the computer's cgroups (so nothing escapes). */
  private spawnBwrap(
    argv: string[],
    procsFiles: string[],
    dataFiles: Buffer[],
    extraPipes: number,
    bindWorkspace: { source: string; target: string } | null,
  ): ChildProcess {
    // Options travel through fd 3 (kept out of the guest's /proc/1/cmdline); bwrap reads the
    // command itself only from its real argv.
    const split = argv.indexOf('--');
    const options = argv.slice(0, split);
    const command = argv.slice(split);
    // The shell joins the cgroups while it still may (as the server's own user), then drops to the
    // sandbox uid right before bwrap, so nothing of the computer ever runs outside them or as root.
    const enter =
      'n=$1; shift; while [ "$n" -gt 0 ]; do echo $$ > "$1" || exit 125; shift; n=$((n-1)); done; exec "$@"';
    const drop = this.runAs
      ? [
          SETPRIV,
          `--reuid=${this.runAs.agentHostId}`,
          `--regid=${this.runAs.agentHostId}`,
          '--clear-groups',
          '--inh-caps=-all',
          '--bounding-set=-all',
          '--',
        ]
      : [];
    const bind = bindWorkspace ? workspaceBindPrefix(bindWorkspace) : [];
    const child = spawn(
      '/bin/sh',
      [
        '-c',
        enter,
        'paddock-launch',
        String(procsFiles.length),
        ...procsFiles,
        ...bind,
        ...drop,
        this.bwrapPath,
        '--args',
        '3',
        ...command,
      ],
      {
        stdio: [
          'pipe',
          'pipe',
          'pipe',
          'pipe',
          ...dataFiles.map(() => 'pipe' as const),
          ...Array.from({ length: extraPipes }, () => 'pipe' as const),
        ],
        env: { PATH: process.env.PATH ?? HOST_PATH.join(':') },
      },
    );
    const feed = (fd: number, content: Buffer | string) => {
      const pipe = child.stdio[fd] as NodeJS.WritableStream;
      pipe.on('error', () => undefined);
      pipe.end(Buffer.isBuffer(content) ? content : Buffer.from(content));
    };
    feed(3, `${options.join('\0')}\0`);
    dataFiles.forEach((content, i) => {
      feed(FIRST_DATA_FD + i, content);
    });
    return child;
  }
}

class BwrapInstance implements SandboxInstance {
  readonly fromGuest;
  readonly toGuest;
  readonly diagnostics;
  readonly familyMechanism;
  readonly jobRlimits: JobRlimits;
  readonly enforcement: Record<string, string>;
  readonly hostPid: number;
  private agentHostPid: number | null = null;
  private destroyed: Promise<void> | null = null;

  constructor(
    private readonly child: ChildProcess,
    readonly exited: Promise<{ exitCode: number | null; signal: string | null }>,
    private readonly node: CgroupNode | null,
    private readonly spec: SandboxSpec,
    private readonly logger: Logger,
    readonly hostWorkspace: string,
    /** This generation's own directory, removed with it (never a kept workspace). */
    private readonly removeOnDestroy: string | null,
  ) {
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
      disk: 'rlimit file size; /tmp tmpfs size',
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
      kill: () => group.kill(),
      isEmpty: () => group.isEmpty(),
      waitEmpty: (timeoutMs) => group.waitEmpty(timeoutMs),
      hostPids: () => group.pids(),
      dispose: async () => {
        await group.destroy();
      },
    };
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
    if (this.removeOnDestroy) rmSync(this.removeOnDestroy, { recursive: true, force: true });
  }
}
