/**
 * One computer as its sessions see it: its current generation, launch and status, its jobs,
 * terminals, preview, log and request idempotency. A launch replaces the generation as a whole.
 * The ComputerService holds one manager per named computer and per private owner.
 */
import type { ExecResolver } from '../policy/types.js';
import { raceAbort } from '../shared/abort.js';
import { PaddockError } from '../shared/errors.js';
import type { CallerContext } from '../tools/tool.js';
import { checkpointOnStop } from './checkpoint-actions.js';
import type { CheckpointStore } from './checkpoints/store.js';
import type { RootSeed } from './checkpoints/types.js';
import { type ComebackHost, comebackOf } from './comeback.js';
import type { Generation } from './generation/generation.js';
import { followServices, listeningPortsOf, servicesOf } from './generation/services.js';
import { afterBootScripts, startGeneration } from './generation/start.js';
import { carryInto } from './generation/workspace-carry.js';
import { guestExecResolver } from './guest-resolvers.js';
import { IdempotencyCache } from './idempotency.js';
import type { Job, JobResult } from './jobs/job.js';
import type { CancelResult, RunRequest } from './jobs/requests.js';
import { resolveJobId } from './jobs/resolve.js';
import { bootLaunchLink, createLaunchLink, type LaunchLink, type LaunchLinkBoot } from './launch-links.js';
import { ComputerLog } from './logs.js';
import { PreviewService } from './preview/preview-service.js';
import type { ProfileInfo } from './profiles.js';
import { ComputerContext, type ComputerServiceOptions } from './service-context.js';
import {
  type ComputerStatus,
  comebackSentence,
  describeStatus,
  type LaunchResult,
  replacedSentence,
} from './status.js';
import { TerminalService } from './terminals/terminal-service.js';
import type { WarmPool } from './warm-pool.js';

export type { CancelResult, RunRequest } from './jobs/requests.js';
export type { ComputerStatus, LaunchResult } from './status.js';

const STARTUP_TIMEOUT_MS = 300_000;

/** Where tools find the computer of a caller: a ComputerService, or one ComputerManager for all. */
export interface ComputerSource {
  for(caller: CallerContext): ComputerManager;
  /**
   * Named computer `name` as `caller` may reach it (created on first use): where fork_computer
   * puts its fork. Absent where one computer answers for every caller.
   */
  named?(caller: CallerContext, name: string): ComputerManager;
  listProfiles(search?: string): ProfileInfo[];
}

export class ComputerManager implements ComputerSource {
  readonly log: ComputerLog;
  readonly idempotency = new IdempotencyCache();
  /** The terminals of this computer (PTYs in the guest). */
  readonly terminals: TerminalService;
  /** The web preview of this computer. */
  readonly preview: PreviewService;
  private current: Generation | null = null;
  /** The computer's key: `named:<name>` or `private:<owner>` (`local` when it runs alone). */
  readonly name: string;
  private readonly context: ComputerContext;
  /** Whether this manager runs alone (it then owns the backend and closes it). */
  private readonly alone: boolean;

  /**
   * A computer of a ComputerService (`name`, `context`), or one running alone over its own
   * backend (`options`: tests, benches), which then answers for every caller.
   */
  constructor(nameOrOptions: string | ComputerServiceOptions, context?: ComputerContext) {
    this.alone = typeof nameOrOptions !== 'string';
    this.name = typeof nameOrOptions === 'string' ? nameOrOptions : 'local';
    this.context =
      typeof nameOrOptions === 'string'
        ? context!
        : new ComputerContext(nameOrOptions, { activeComputers: () => (this.active ? 1 : 0) });
    const name = this.name;
    const ctx = this.context;
    const emit = ctx.events.emit.bind(ctx.events);
    this.log = new ComputerLog(
      ctx.logger.child({ domain: 'computer', computer: name }),
      undefined,
      undefined,
      (entry) => emit({ type: 'log', computer: name, entry }),
    );
    this.terminals = new TerminalService(this, { retentionBytes: ctx.config.retentionBytes });
    this.preview = new PreviewService(this, {
      portOverride: ctx.config.previewPort,
      ...(ctx.previewBasePath !== undefined ? { basePath: ctx.previewBasePath } : {}),
    });
    this.terminals.onChange(() =>
      emit({ type: 'terminal', computer: name, generation: this.current?.generation ?? null }),
    );
    this.preview.onChange((state) => emit({ type: 'preview', computer: name, state }));
    followServices(name, ctx.events, () => this.current, this.preview);
  }

  /** The computer `caller` acts on: this one (the shape tools take, shared with ComputerService). */
  for(_caller: CallerContext): ComputerManager {
    return this;
  }

  listProfiles(search?: string): ProfileInfo[] {
    return this.context.profiles.list(search);
  }

  /** The warm pool of its server (its state for tests and status). */
  get pool(): WarmPool {
    return this.context.pool;
  }

  /** The dock's URL for this server. */
  get dockUrl(): string {
    return this.context.dockUrl();
  }

  /** The dock, opened on this computer (what launch_computer and get_computer_status answer). */
  get watchUrl(): string {
    return `${this.context.dockUrl()}?computer=${encodeURIComponent(this.name)}`;
  }

  /** The current generation, if any was launched. */
  get computer(): Generation | null {
    return this.current;
  }

  /** Whether the current generation is booting or running (it counts against the server's cap). */
  get active(): boolean {
    return this.current?.lifecycle === 'booting' || this.current?.lifecycle === 'running';
  }

  /**
   * Replaces the current generation with a new one of `profileId` and returns at once; the new
   * one boots in place. A launch while the current one is still booting is refused.
   */
  launch(
    profileId: string,
    afterBoot?: (c: Generation) => Promise<void>,
    options: {
      keepWorkspace?: boolean;
      seedWorkspace?: (dir: string) => Promise<void>;
      /** A restored root layer (checkpoints/root-seed.ts). */
      seedRoot?: RootSeed;
    } = {},
  ): LaunchResult {
    const replaced = this.current?.generation ?? null;
    // a named computer booting again after a stop, a crash or a restart gets its latest checkpoint back
    const comeback =
      !options.seedWorkspace && !options.keepWorkspace && !this.active
        ? comebackOf(this.comebackHost, profileId)
        : null;
    const seed = comeback?.seedWorkspace ?? options.seedWorkspace;
    const seedRoot = comeback ? comeback.seedRoot : options.seedRoot;
    const { computer, previousWorkspace, carried } = startGeneration(this.context, {
      name: this.name,
      profileId,
      log: this.log,
      previous: this.current,
      active: this.active,
      ...(options.keepWorkspace ? { keepWorkspace: true } : {}),
      ...(seed ? { seedWorkspace: seed } : {}),
      ...(seedRoot ? { seedRoot } : {}),
    });
    this.current = computer;
    this.context.launched(this.name, computer.generation);
    computer.emitLifecycle();
    void computer.booted
      .then(() =>
        carried && computer.lifecycle === 'running' ? carryInto(computer, carried, this.log) : undefined,
      )
      .then(() =>
        afterBootScripts(computer, this.log, (script) => this.startScript(computer, script), afterBoot),
      );
    return {
      generation: computer.generation,
      profileId: computer.profile.id,
      lifecycle: computer.lifecycle,
      url: this.watchUrl,
      previousWorkspace,
      ...(comeback ? { restoredFrom: comeback.checkpoint.id } : {}),
      message: `${replacedSentence(replaced, previousWorkspace)}${comeback ? comebackSentence(comeback.checkpoint) : ''}The computer is booting; poll get_computer_status until lifecycle is running or error.`,
    };
  }

  /** What a comeback reads of this computer (comeback.ts). */
  private get comebackHost(): ComebackHost {
    const ctx = this.context;
    return {
      name: this.name,
      log: this.log,
      checkpoints: this.checkpoints,
      workspaceKept: (profileId) => this.workspaceKept(profileId),
      profile: (profileId) => ctx.profiles.get(profileId),
      imageOf: (profile) => ctx.imageOf(profile),
    };
  }

  /** Whether every run_command is checkpointed first (`computer.checkpoints.before`). */
  get checkpointsBeforeRunCommand(): boolean {
    return this.context.config.checkpoints.before.includes('run_command');
  }

  /** Where this computer's checkpoints are kept, and the name they are kept under. */
  get checkpoints(): { store: CheckpointStore; key: string } {
    return { store: this.context.checkpoints, key: this.context.checkpointKey(this.name) };
  }

  /** Tells the computer's subscribers (the dock's timeline) that its checkpoints changed. */
  checkpointsChanged(checkpointId: string | null): void {
    this.context.events.emit({ type: 'checkpoint', computer: this.name, checkpointId });
  }

  /** Whether this computer's /workspace outlives its generations (a checkpoint is then restored in place only by a later version). */
  workspaceKept(profileId: string): boolean {
    return this.context.workspaceMode(this.name, this.context.profiles.get(profileId)) === 'keep';
  }

  status(): ComputerStatus {
    return describeStatus(this.current, this.watchUrl, {
      activeTerminal: this.terminals.active(),
      preview: this.current ? this.preview.state() : null,
      services: servicesOf(this.current),
      listeningPorts: listeningPortsOf(this.current),
    });
  }

  /**
   * The running computer. With `autoLaunch`, a computer that never launched boots the default
   * profile first; a booting one is awaited. Anything else is NOT_RUNNING.
   */
  async requireRunning(signal?: AbortSignal): Promise<Generation> {
    const { config } = this.context;
    if (!this.current && config.autoLaunch && !this.context.closed) {
      this.log.add(
        'info',
        'computer.autolaunch',
        `A tool needs the computer; booting the default profile ${config.defaultProfile}.`,
      );
      this.launch(config.defaultProfile);
    }
    const c = this.current;
    if (!c) {
      throw new PaddockError(
        'NOT_RUNNING',
        'No computer is running; call launch_computer with a profileId from list_profiles, then poll get_computer_status.',
      );
    }
    if (c.lifecycle === 'booting') {
      await raceAbort(c.booted, signal, {
        error: () =>
          new PaddockError('TIMEOUT', 'The call was cancelled while the computer was booting; retry.'),
      });
    }
    if (c.lifecycle !== 'running') {
      throw new PaddockError(
        'NOT_RUNNING',
        `The computer (generation ${c.generation}) is ${c.lifecycle}${c.bootError ? `: ${c.bootError}` : ''}. Relaunch it with launch_computer.`,
      );
    }
    return c;
  }

  /** run_command: starts a job and waits up to `waitMs` for it. */
  async runCommand(req: RunRequest, signal?: AbortSignal): Promise<JobResult> {
    const c = await this.requireRunning(signal);
    return this.startOn(c, req, signal);
  }

  private async startOn(c: Generation, req: RunRequest, signal?: AbortSignal): Promise<JobResult> {
    const factory = this.context.toolChannels;
    const grant = req.channel;
    const enabled = c.profile.toolChannel ?? this.context.config.toolChannel;
    // the job counts against its caller's principal from its start until its root exits
    const ticket = this.context.reserveJob(grant?.caller, this.name);
    let jobId: string | null = null;
    const open = (id: string) => {
      jobId = id;
      ticket.started(id);
      return factory && grant && enabled
        ? factory({ ...grant, jobId: id, deadline: Date.now() + req.timeoutMs })
        : null;
    };
    try {
      return await c.jobs.run(req, signal, open);
    } catch (e) {
      // a job that never started gives its slot back (one that runs on keeps it until it exits)
      const id = jobId;
      if (id === null || !c.jobs.list().some((j) => j.id === id)) ticket.release();
      throw e;
    }
  }

  /**
   * Ends one job of a revoked caller: its tool channel refuses every later call with `reason`
   * at once, its egress proxy credentials are withdrawn, and the job is cancelled with every
   * descendant. Null when the job is gone already.
   */
  async revokeJob(
    jobId: string,
    reason: PaddockError,
  ): Promise<{ cancel: CancelResult; channel: boolean; egress: boolean } | null> {
    let found: ReturnType<ComputerManager['resolveJob']>;
    try {
      found = this.resolveJob(jobId);
    } catch {
      return null;
    }
    const channel = found.computer.jobs.closeChannel(found.job, reason);
    const egress = found.computer.revokeEgress(found.job.id);
    return { cancel: await found.computer.jobs.cancel(found.job), channel, egress };
  }

  /** Whether `generation` was one of this computer's (its ids are stale, not another's). */
  launchedHere(generation: number): boolean {
    return this.context.launchedHere(this.name, generation);
  }

  /** The job behind an id: STALE_GENERATION, NOT_FOUND or INVALID_ARGUMENT otherwise. */
  resolveJob(jobId: string): { computer: Generation; job: Job } {
    return resolveJobId(jobId, this.current, (generation) => this.launchedHere(generation));
  }

  readJob(jobId: string, cursor: string | undefined, byteLimit: number): JobResult {
    return this.resolveJob(jobId).job.read(cursor, byteLimit);
  }

  /** read_job with waitMs: answers once there is output after `cursor` or the job ended (or at waitMs). */
  async readJobWhenChanged(
    jobId: string,
    cursor: string | undefined,
    byteLimit: number,
    waitMs: number,
    signal?: AbortSignal,
  ): Promise<JobResult> {
    const { job } = this.resolveJob(jobId);
    job.read(cursor, 1); // a bad or expired cursor fails now, not after the wait
    await job.waitForChange(cursor, waitMs, signal);
    return this.readJob(jobId, cursor, byteLimit);
  }

  /** Kills a job and every descendant; `cancelling` when they are not all gone within a second. */
  async cancelJob(jobId: string): Promise<CancelResult> {
    const { computer, job } = this.resolveJob(jobId);
    return computer.jobs.cancel(job);
  }

  /** An ExecResolver that looks executables up inside this computer (for policy checks). */
  guestExecResolver(signal?: AbortSignal): ExecResolver {
    return guestExecResolver(() => this.requireRunning(signal), signal);
  }

  readLogs(options: Parameters<ComputerLog['read']>[0]) {
    return this.log.read(options);
  }

  /** Stores a launch link for `profileId` (default: the current profile, else the default). */
  createLaunchLink(
    profileId: string | undefined,
    startupScript: string,
  ): Promise<LaunchLink & { url: string }> {
    const profile = this.context.profiles.get(
      profileId ?? this.current?.profile.id ?? this.context.config.defaultProfile,
    );
    return createLaunchLink(this, this.context.launchLinks, profile.id, startupScript);
  }

  /**
   * Boots a launch link: launches its profile and, once running, starts its startup script as a
   * job. Resolves with the launch result and, when there is a script, the job's id.
   */
  bootLaunchLink(id: string): Promise<LaunchLinkBoot> {
    return bootLaunchLink(this, this.context.launchLinks, id);
  }

  /** Starts a startup script as a job of `c` (profile or launch link). */
  startScript(c: Generation, script: string): Promise<JobResult> {
    return this.startOn(c, { script, waitMs: 0, timeoutMs: STARTUP_TIMEOUT_MS });
  }

  /** A manager running alone: stops its computer and frees its backend. */
  async close(): Promise<void> {
    if (!this.alone) throw new Error('a computer of a ComputerService is closed by the service');
    this.context.close();
    await this.stop(new PaddockError('NOT_RUNNING', 'The server is shutting down.'));
    this.context.checkpoints.close();
    await this.context.drainPool();
    await this.context.backend.dispose();
  }

  /** Stops the current generation (idle, released or shutdown); the manager can launch again. */
  async stop(reason: PaddockError): Promise<void> {
    const c = this.current;
    if (!c || c.lifecycle === 'stopped') return;
    await checkpointOnStop(this, c);
    await c.destroy(reason);
  }
}
