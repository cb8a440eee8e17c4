/**
 * The local backend: one bubblewrap sandbox per computer, the guest agent inside it.
 *
 * As root, every computer and every job is a cgroup (see cgroups.ts): limits, CPU fairness and
 * whole-family kills are enforced by the kernel. Without cgroups, jobs get rlimits and a new
 * session, and a kill reaches the job's process group only (reported as `session`).
 *
 * As root, a computer's writable files live in a disk image of its own under the data
 * directory, mounted only in the launch's private mount namespace (see workspace.ts and
 * launch-namespace.ts); no account but root and the sandbox's own uids can reach any of it.
 */
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { PaddockError } from '../../../shared/errors.js';
import type { Logger } from '../../../shared/logger.js';
import { collidesWithImageIds, imageIdMapText } from '../../images/ids.js';
import {
  GUEST_PATH,
  GUEST_RESOLVER,
  GUEST_SCOPE_PROGRAM,
  GUEST_SPAWNER_PROGRAM,
  ROOT_PATH,
} from '../../link/guest-layout.js';
import type { ComputerBackend, SandboxInstance, SandboxSpec } from '../types.js';
import { type BwrapLayout, buildBwrapArgs, generatedEtc, IMAGE_OWN_ETC, sandboxName } from './args.js';
import { CgroupRoot } from './cgroups.js';
import { DiskSpares, type DiskSupport, detachLoopDevices, diskImageSupport } from './disk-image.js';
import { guestPackages, nativeAddons } from './guest-packages.js';
import { canExecute, etcEntries, loaderOf, rootEntries } from './host-facts.js';
import { type IdMap, idMapText, writeIdMaps } from './id-map.js';
import { BwrapInstance } from './instance.js';
import { launchNamespacePrefix } from './launch-namespace.js';
import { RuntimeStage } from './runtime-files.js';
import { createSandboxRoot, type SandboxRoot, sweepSandboxRoots } from './sandbox-root.js';
import { scopeProgram } from './scope-program.js';
import { seccompFilter } from './seccomp.js';
import { FIRST_DATA_FD, HOST_PATH, spawnBwrap } from './spawn.js';
import { spawnerProgram } from './spawner-program.js';
import { prepareStorage } from './workspace.js';

const MIB = 1024 * 1024;
/** Default host uid of sandboxes when Paddock runs as root without cgroups. */
export const DEFAULT_SANDBOX_UID = 64_000;

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
   * Use a disk image per computer where this host can (default true). False keeps workspaces as
   * plain directories, whose size is then not limited (tests of that fallback).
   */
  useDiskImages?: boolean;
  /**
   * Host uid (and gid) the sandbox's guest agent runs as when Paddock runs as root; jobs and
   * terminals run as the next uid (default 64000 and 64001). Both should own nothing else.
   */
  sandboxUid?: number;
}

/** The guest agent directory of this build. */
export function defaultGuestDir(): string {
  return join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..', 'guest');
}

/** The in-computer clients (paddock-tool, paddock_tool, the Node client) of this checkout. */
export function defaultClientsDir(): string {
  // dist/src/computer/backend/bwrap → the package root
  return join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..', '..', '..', 'clients');
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
  /** Whether each computer gets a disk image (its size limit), and why not. */
  readonly disk: DiskSupport;
  private sandboxRoot: SandboxRoot | null = null;
  private readonly guestPackages = guestPackages();
  /** The host loader and libraries of node, for computers on images (see bwrap-args.ts). */
  private readonly agentLoader = loaderOf(process.execPath, nativeAddons(this.guestPackages));
  /** Bound into every sandbox where they exist: the jobs' Landlock launcher, the spares' spawner. */
  private readonly programs = Object.entries({
    [GUEST_SCOPE_PROGRAM]: scopeProgram(),
    [GUEST_SPAWNER_PROGRAM]: spawnerProgram(),
  }).filter((p): p is [string, Buffer] => p[1] !== null);
  private readonly stage: RuntimeStage | null;
  private readonly spares: DiskSpares;

  constructor(options: BwrapBackendOptions) {
    this.logger = options.logger;
    this.bwrapPath = options.bwrapPath ?? 'bwrap';
    this.guestDir = options.guestDir ?? defaultGuestDir();
    this.cgroups = options.useCgroups === false ? null : CgroupRoot.create(options.logger);
    const uid = options.sandboxUid ?? DEFAULT_SANDBOX_UID;
    // As root, the sandbox never runs as host uid 0: its files (setuid bits included) and its view of
    // root-only /proc entries would be root's. It runs as a dedicated uid that owns nothing else.
    const runAs = process.getuid?.() === 0 ? { agentHostId: uid, jobHostId: uid + 1 } : null;
    this.runAs = runAs;
    this.disk =
      options.useDiskImages === false
        ? { ok: false, reason: 'disk images are turned off for this server' }
        : diskImageSupport();
    this.stage = runAs ? new RuntimeStage(() => this.ensureSandboxRoot().runtime, runAs.jobHostId) : null;
    this.spares = new DiskSpares(() => this.ensureSandboxRoot(), this.logger);
    // sandbox roots of crashed servers (only those of dead server pids)
    sweepSandboxRoots(tmpdir(), this.logger);
    if (runAs)
      this.logger.info('computer.sandbox_uid', {
        agentUid: uid,
        jobsUid: uid + 1,
        limits: this.cgroups ? 'cgroups' : 'rlimits (no writable cgroups)',
      });
    if (this.disk.ok)
      this.logger.info('computer.disk_quota', { enforced: true, how: 'a disk image per computer' });
    else
      this.logger.warn('computer.disk_quota', {
        enforced: false,
        reason: this.disk.reason,
        effect: "a profile's diskMb limits /tmp and single files only; /workspace can fill the host's disk",
      });
  }

  /**
   * Why computers on images cannot run here, or null when they can: they need Paddock as root
   * (the launch namespace mounts their overlay), a disk per computer (which holds their writable
   * layer), the job launcher (which drops the capabilities jobs would otherwise inherit), overlayfs,
   * and sandbox uids outside the image id range.
   */
  imageSupport(): string | null {
    if (!this.runAs) return 'Paddock does not run as root';
    if (!this.disk.ok) return this.disk.reason;
    if (!this.programs.some(([target]) => target === GUEST_SCOPE_PROGRAM))
      return 'the job launcher exists only for x86-64';
    if (collidesWithImageIds(this.runAs)) return 'computer.sandboxUid lies inside the image id range';
    try {
      if (!/\toverlay$/m.test(readFileSync('/proc/filesystems', 'utf8')))
        return 'the kernel has no overlayfs';
    } catch {
      return '/proc/filesystems cannot be read';
    }
    return null;
  }

  /** What the kernel enforces for this server's computers. */
  get cgroupSupport(): { familyKill: boolean; limits: string[] } | null {
    return this.cgroups?.support ?? null;
  }

  hasProgram(name: string): boolean {
    if (name.startsWith('/')) return canExecute(name);
    return HOST_PATH.some((dir) => canExecute(join(dir, name)));
  }

  sweep(dirs: string[]): void {
    // disks are mounted only in launch namespaces, which die with their sandboxes; a loop device
    // can outlive a crash only between its attach and its mount
    if (this.disk.ok) detachLoopDevices(dirs, this.logger);
  }

  async launch(spec: SandboxSpec): Promise<SandboxInstance> {
    if (!existsSync(join(this.guestDir, 'agent.js'))) {
      throw new PaddockError(
        'INTERNAL',
        `The compiled guest agent is missing at ${this.guestDir}; run "npm run build" and launch again.`,
      );
    }
    if (spec.image) {
      const why = this.imageSupport();
      if (why)
        throw new PaddockError(
          'UNSUPPORTED_CAPABILITY',
          `This server cannot run computers on images: ${why}.`,
        );
    }
    const storage = await prepareStorage(spec, {
      runAs: this.runAs,
      root: () => this.ensureSandboxRoot(),
      disk: this.disk,
      spares: this.spares,
      logger: this.logger,
    });
    try {
      return await this.start(spec, storage);
    } catch (e) {
      for (const dir of storage.removeOnDestroy) rmSync(dir, { recursive: true, force: true });
      throw e;
    }
  }

  private async start(
    spec: SandboxSpec,
    storage: Awaited<ReturnType<typeof prepareStorage>>,
  ): Promise<SandboxInstance> {
    const shell = canExecute('/bin/bash') ? '/bin/bash' : '/bin/sh';
    const name = sandboxName(spec);
    // the network namespace keeps only lo either way; "proxy" adds the relay port (guest agent)
    // the agent answers DNS on lo where it has its own account (it may bind port 53 there)
    const resolver = this.runAs ? GUEST_RESOLVER : null;
    const etc = generatedEtc(
      spec.generation,
      shell,
      name,
      resolver,
      spec.image?.user === 'root' ? ROOT_PATH : GUEST_PATH,
    );
    // on an image, accounts and name service come from the image (apt and adduser change them)
    if (spec.image) for (const own of IMAGE_OWN_ETC) delete etc[own];
    const files = Object.entries({ ...etc, ...spec.files });
    // Generated files reach bwrap through pipes (fd 4, 5, …): no host path to expose or traverse.
    const generated = Object.fromEntries(files.map(([target], i) => [target, FIRST_DATA_FD + i]));
    // the programs follow them
    const programFds = Object.fromEntries(
      this.programs.map(([target], i) => [target, FIRST_DATA_FD + files.length + i]),
    );
    // as the dedicated uid, bind only what that uid can reach (staged copies otherwise)
    const { stage } = this;
    const reach = (path: string, name: string) => (stage ? stage.path(path, name) : path);
    const clients = existsSync(defaultClientsDir()) ? reach(defaultClientsDir(), 'clients') : null;
    const layout: BwrapLayout = {
      nodePath: reach(process.execPath, 'node'),
      guestDir: reach(this.guestDir, 'guest'),
      clientsDir: clients,
      guestPackages: this.guestPackages.map((p) => ({ ...p, dir: reach(p.dir, `packages/${p.name}`) })),
      workspace: storage.workspace,
      tmpDir: storage.tmp,
      generated,
      programs: programFds,
      rootEntries: rootEntries(),
      etcEntries: etcEntries(),
      image: spec.image && storage.root ? { root: storage.root, user: spec.image.user } : null,
      agentLoader: spec.image ? this.agentLoader : null,
    };
    const filter = seccompFilter();
    const seccompFd = FIRST_DATA_FD + files.length + this.programs.length;
    const infoFd = seccompFd + (filter ? 1 : 0);
    if (this.runAs) layout.accounts = { infoFd, blockFd: infoFd + 1 };
    if (process.allowedNodeEnvironmentFlags.has('--disable-sigusr1'))
      layout.nodeFlags = ['--disable-sigusr1'];
    const args = buildBwrapArgs({ ...spec, mounts: storage.mounts }, layout);
    if (filter) args.splice(args.indexOf('--'), 0, '--seccomp', String(seccompFd));
    const node = this.cgroups?.computer(name, {
      pidsMax: spec.limits.processes,
      memoryBytes: spec.limits.memoryMb * MIB,
    });
    const { runAs } = this;
    const child = spawnBwrap({
      bwrapPath: this.bwrapPath,
      argv: args,
      procsFiles: node?.procsFiles() ?? [],
      dataFiles: [
        ...files.map(([, content]) => Buffer.from(content)),
        ...this.programs.map(([, content]) => content),
        ...(filter ? [filter] : []),
      ],
      extraPipes: runAs ? 2 : 0,
      prefix:
        runAs && storage.launch
          ? launchNamespacePrefix(storage.launch.dir, runAs.agentHostId, storage.launch.mounts)
          : [],
      runAs,
    });
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
        if (!runAs) return;
        const [info, block] = [child.stdio[infoFd], child.stdio[infoFd + 1]];
        const lines = spec.image ? imageIdMapText(runAs) : idMapText(runAs);
        return writeIdMaps(info as NodeJS.ReadableStream as never, block as never, lines);
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
    // a disk mounted in the launch namespace is reached through the sandbox's root
    const hostWorkspace = storage.hostWorkspace.inLaunchNamespace
      ? `/proc/${child.pid}/root${storage.hostWorkspace.path}`
      : storage.hostWorkspace.path;
    const rootLayer =
      storage.rootLayer && spec.image
        ? { hostPath: `/proc/${child.pid}/root${storage.rootLayer}`, image: spec.image }
        : null;
    return new BwrapInstance({
      child,
      exited,
      node: node ?? null,
      spec,
      logger: this.logger,
      hostWorkspace,
      rootLayer,
      diskQuota: storage.quota,
      removeOnDestroy: storage.removeOnDestroy,
    });
  }

  async dispose(): Promise<void> {
    await this.cgroups?.dispose();
    await this.spares.dispose();
    if (this.sandboxRoot) rmSync(this.sandboxRoot.dir, { recursive: true, force: true });
  }

  /** The server's own scratch directory: the launch anchor and staged runtime files. */
  private ensureSandboxRoot(): SandboxRoot {
    if (!this.sandboxRoot) {
      if (!this.runAs) throw new Error('the sandbox root is used only when sandboxes run as their own uid');
      this.sandboxRoot = createSandboxRoot(tmpdir(), this.runAs);
    }
    return this.sandboxRoot;
  }
}
