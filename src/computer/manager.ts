/**
 * The ComputerManager: profiles, generations, launch and status, jobs, files, logs, launch
 * links and request idempotency. One current computer per server; a launch replaces it.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Database } from '../audit/database.js';
import type { ComputerConfig } from '../config/computer-schema.js';
import type { ExecResolver, PathResolver } from '../policy/types.js';
import { PaddockError } from '../shared/errors.js';
import type { Logger } from '../shared/logger.js';
import type { ComputerBackend } from './backend/types.js';
import { Computer, type Lifecycle, MAX_FINISHED_JOBS } from './computer.js';
import { parseId } from './cursors.js';
import type { EgressService } from './egress.js';
import { IdempotencyCache } from './idempotency.js';
import type { Job, JobResult } from './jobs/job.js';
import { abortable, type CancelResult, cancelJobOn, type RunRequest, startJobOn } from './jobs/requests.js';
import type { ToolChannelFactory } from './jobs/tool-channel.js';
import { type LaunchLink, LaunchLinkStore } from './launch-links.js';
import { ComputerLog } from './logs.js';
import { PreviewService, type PreviewServiceOptions } from './preview/preview-service.js';
import { ProfileCatalog, type ProfileInfo } from './profiles.js';
import { type ComputerStatus, describeStatus, type LaunchResult } from './status.js';
import { TerminalService } from './terminals/terminal-service.js';

export type { CancelResult, RunRequest } from './jobs/requests.js';
export type { ComputerStatus, LaunchResult } from './status.js';

const PROBE = ['bash', 'sh', 'python3', 'node', 'npm', 'git', 'curl'];

export interface ComputerManagerOptions {
  backend: ComputerBackend;
  config: ComputerConfig;
  /** The server's data directory; workspaces live under <dataDir>/computers unless configured. */
  dataDir: string;
  /** Base URL of the dock, e.g. http://127.0.0.1:7331 (launch answers `<dockUrl>/`). */
  dockUrl: string;
  logger: Logger;
  /** Database holding `launch_links`; without it launch links are unavailable. */
  db?: Database | null;
  /** Opens tool channels for commands (none: commands have no channel). */
  toolChannels?: ToolChannelFactory;
  /** How the web app serves the preview (base path, the token to keep from the guest). */
  preview?: Omit<PreviewServiceOptions, 'portOverride'>;
  /** Egress through the host proxy for profiles with network mode "proxy" (none: such profiles are unavailable). */
  egress?: EgressService;
  /** Read-only host directories every computer sees (e.g. the skills of `.paddock/skills` at /skills). */
  sharedMounts?: { source: string; target: string; readOnly: true }[];
}

export class ComputerManager {
  readonly log: ComputerLog;
  readonly profiles: ProfileCatalog;
  readonly idempotency = new IdempotencyCache();
  readonly launchLinks: LaunchLinkStore | null;
  /** The terminals of the current computer (PTYs in the guest). */
  readonly terminals: TerminalService;
  /** The web preview of the current computer. */
  readonly preview: PreviewService;
  private current: Computer | null = null;
  private lastGeneration: number;
  private readonly computersDir: string;
  private closed = false;

  constructor(private readonly options: ComputerManagerOptions) {
    this.log = new ComputerLog(options.logger.child({ domain: 'computer' }));
    this.profiles = new ProfileCatalog(
      options.config.profiles,
      (name) => options.backend.hasProgram(name),
      options.egress !== undefined,
    );
    this.launchLinks = options.db ? new LaunchLinkStore(options.db) : null;
    this.computersDir = options.config.workspaceDir ?? join(options.dataDir, 'computers');
    mkdirSync(this.computersDir, { recursive: true, mode: 0o700 });
    this.lastGeneration = this.readGenerationCounter();
    this.terminals = new TerminalService(this, { retentionBytes: options.config.retentionBytes });
    this.preview = new PreviewService(this, { ...options.preview, portOverride: options.config.previewPort });
    this.log.add('info', 'computer.service', `Computer service ready (backend ${options.backend.name}).`);
  }

  /** Sets the dock's base URL once the server knows it (it may listen on a port picked at start). */
  setDockUrl(url: string): void {
    this.options.dockUrl = url;
  }

  /** The dock's URL for this server. */
  get dockUrl(): string {
    return `${this.options.dockUrl.replace(/\/+$/, '')}/`;
  }

  /** The current generation, if any was launched. */
  get computer(): Computer | null {
    return this.current;
  }

  listProfiles(search?: string): ProfileInfo[] {
    return this.profiles.list(search);
  }

  /**
   * Replaces the current computer with a new generation of `profileId` and returns at once; the
   * new one boots in place. A launch while the current one is still booting is refused.
   */
  launch(profileId: string, afterBoot?: (c: Computer) => Promise<void>): LaunchResult {
    if (this.closed)
      throw new PaddockError('NOT_RUNNING', 'The server is shutting down; launch after it restarts.');
    const profile = this.profiles.get(profileId);
    const { available, reason } = this.profiles.availability(profile);
    if (!available) {
      this.log.add('warn', 'computer.launch_refused', `Profile ${profile.id} cannot launch: ${reason}`);
      throw new PaddockError(
        'UNSUPPORTED_CAPABILITY',
        `Profile "${profile.id}" is not available on this server (${reason}) Pick an available profile from list_profiles.`,
      );
    }
    const previous = this.current;
    if (previous?.lifecycle === 'booting') {
      this.log.add(
        'warn',
        'computer.launch_refused',
        `Launch of ${profile.id} refused: generation ${previous.generation} is still booting.`,
        {
          generation: previous.generation,
        },
      );
      throw new PaddockError(
        'NOT_RUNNING',
        `Generation ${previous.generation} is still booting; poll get_computer_status until it is running or in error before launching again.`,
        { generation: previous.generation },
      );
    }
    const generation = ++this.lastGeneration;
    writeFileSync(join(this.computersDir, 'generation'), `${generation}\n`);
    const hostDir = join(this.computersDir, `g${generation}`);
    const teardown = previous
      ? previous.destroy(
          new PaddockError(
            'STALE_GENERATION',
            `Generation ${previous.generation} was replaced by generation ${generation}; use the current computer.`,
          ),
        )
      : Promise.resolve();
    if (previous) {
      this.log.add(
        'info',
        'computer.replace',
        `Generation ${previous.generation} is being replaced; all its processes are killed.`,
        {
          generation: previous.generation,
        },
      );
    }
    const computer = new Computer({
      generation,
      profile: { ...profile, mounts: [...profile.mounts, ...(this.options.sharedMounts ?? [])] },
      backend: this.options.backend,
      log: this.log,
      hostDir,
      retentionBytes: profile.limits.outputBytes ?? this.options.config.retentionBytes,
      bootTimeoutMs: this.options.config.bootTimeoutMs,
      probe: PROBE,
      before: teardown,
      egress: this.options.egress?.forComputer(generation, profile, this.log) ?? null,
    });
    this.current = computer;
    this.log.add(
      'info',
      'computer.launch',
      `Launching generation ${generation} with profile ${profile.id}.`,
      { generation },
    );
    void computer.booted.then(() => this.afterBoot(computer, afterBoot));
    return {
      generation,
      profileId: profile.id,
      lifecycle: computer.lifecycle,
      url: this.dockUrl,
      message: 'The computer is booting; poll get_computer_status until lifecycle is running or error.',
    };
  }

  private async afterBoot(c: Computer, extra?: (c: Computer) => Promise<void>): Promise<void> {
    if (c.lifecycle !== 'running') return;
    const script = c.profile.startupScript;
    if (script) {
      await this.startOn(c, { script, waitMs: 0, timeoutMs: 300_000 }).catch((e: unknown) => {
        this.log.add(
          'err',
          'computer.startup_failed',
          `The profile's startup script did not start: ${(e as Error).message}`,
          { generation: c.generation },
        );
      });
    }
    await extra?.(c).catch((e: unknown) => {
      this.log.add(
        'err',
        'computer.startup_failed',
        `The launch link's startup script did not start: ${(e as Error).message}`,
        { generation: c.generation },
      );
    });
  }

  status(): ComputerStatus {
    return describeStatus(this.current, this.dockUrl, {
      activeTerminal: this.terminals.active(),
      preview: this.current ? this.preview.state() : null,
    });
  }

  /**
   * The running computer. With `autoLaunch`, a server that never launched one boots the default
   * profile first; a booting one is awaited. Anything else is NOT_RUNNING.
   */
  async requireRunning(signal?: AbortSignal): Promise<Computer> {
    if (!this.current && this.options.config.autoLaunch && !this.closed) {
      this.log.add(
        'info',
        'computer.autolaunch',
        `A tool needs the computer; booting the default profile ${this.options.config.defaultProfile}.`,
      );
      this.launch(this.options.config.defaultProfile);
    }
    const c = this.current;
    if (!c) {
      throw new PaddockError(
        'NOT_RUNNING',
        'No computer is running; call launch_computer with a profileId from list_profiles, then poll get_computer_status.',
      );
    }
    if (c.lifecycle === 'booting') await abortable(c.booted, signal);
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

  private startOn(c: Computer, req: RunRequest, signal?: AbortSignal): Promise<JobResult> {
    const factory = this.options.toolChannels;
    const grant = req.channel;
    const enabled = c.profile.toolChannel ?? this.options.config.toolChannel;
    const open =
      factory && grant && enabled
        ? (jobId: string) => factory({ ...grant, jobId, deadline: Date.now() + req.timeoutMs })
        : undefined;
    return startJobOn(
      c,
      req,
      c.profile.limits.outputBytes ?? this.options.config.retentionBytes,
      signal,
      open,
    );
  }

  /** The job behind an id: STALE_GENERATION, NOT_FOUND or INVALID_ARGUMENT otherwise. */
  resolveJob(jobId: string): { computer: Computer; job: Job } {
    const { generation, n } = parseId(jobId, 'job');
    const c = this.current;
    if (c && generation < c.generation) {
      throw new PaddockError(
        'STALE_GENERATION',
        `${jobId} belongs to generation ${generation}, which was replaced by generation ${c.generation}; its processes are gone. Run the command again.`,
      );
    }
    const job = c && generation === c.generation ? c.job(n) : undefined;
    if (c && !job && generation === c.generation && c.hadJob(n)) {
      throw new PaddockError(
        'NOT_FOUND',
        `${jobId} finished a while ago and its output was dropped (only the newest ${MAX_FINISHED_JOBS} finished jobs are kept); run the command again if you need its output.`,
      );
    }
    if (!c || !job)
      throw new PaddockError(
        'NOT_FOUND',
        `No job ${jobId} in the current computer; use a jobId that run_command returned.`,
      );
    return { computer: c, job };
  }

  readJob(jobId: string, cursor: string | undefined, byteLimit: number): JobResult {
    return this.resolveJob(jobId).job.read(cursor, byteLimit);
  }

  /** Kills a job and every descendant; `cancelling` when they are not all gone within a second. */
  async cancelJob(jobId: string): Promise<CancelResult> {
    const { computer, job } = this.resolveJob(jobId);
    return cancelJobOn(computer, job, this.log);
  }

  /** A PathResolver that resolves inside the current computer (for policy checks). */
  guestPathResolver(signal?: AbortSignal): PathResolver {
    return {
      realpath: async (path: string) => {
        const c = await this.requireRunning(signal);
        return (await c.call('fs.realpath', { path }, { signal })).path;
      },
      readlink: async (path: string) => {
        const c = await this.requireRunning(signal);
        return (await c.call('fs.readlink', { path }, { signal })).target;
      },
    };
  }

  /** An ExecResolver that looks executables up inside the current computer (for policy checks). */
  guestExecResolver(signal?: AbortSignal): ExecResolver {
    return {
      which: async (name: string, searchPath: readonly string[]) => {
        const c = await this.requireRunning(signal);
        return (await c.call('which', { name, searchPath: [...searchPath] }, { signal })).path;
      },
    };
  }

  readLogs(options: Parameters<ComputerLog['read']>[0]) {
    return this.log.read(options);
  }

  /** Stores a launch link for `profileId` (default: the current profile, else the default). */
  createLaunchLink(profileId: string | undefined, startupScript: string): LaunchLink & { url: string } {
    if (!this.launchLinks) {
      throw new PaddockError(
        'UNSUPPORTED_CAPABILITY',
        'Launch links need the server database; start Paddock with a data directory.',
      );
    }
    const profile = this.profiles.get(
      profileId ?? this.current?.profile.id ?? this.options.config.defaultProfile,
    );
    const link = this.launchLinks.create(profile.id, startupScript);
    this.log.add('info', 'launch_link.create', `Launch link ${link.id} created for profile ${profile.id}.`);
    return { ...link, url: `${this.dockUrl}launch/${link.id}` };
  }

  /**
   * Boots a launch link: launches its profile and, once running, starts its startup script as a
   * job. Resolves with the launch result and, when there is a script, the job's id.
   */
  async bootLaunchLink(
    id: string,
  ): Promise<{ launch: LaunchResult; jobId: string | null; lifecycle: Lifecycle; bootError: string | null }> {
    if (!this.launchLinks)
      throw new PaddockError('UNSUPPORTED_CAPABILITY', 'Launch links need the server database.');
    const link = this.launchLinks.get(id);
    let started: (jobId: string | null) => void = () => undefined;
    const jobStarted = new Promise<string | null>((resolve) => {
      started = resolve;
    });
    const launch = this.launch(link.profileId, async (c) => {
      if (!link.startupScript) return started(null);
      try {
        const r = await this.startOn(c, { script: link.startupScript, waitMs: 0, timeoutMs: 300_000 });
        this.log.add('info', 'launch_link.boot', `Launch link ${id} started its script as ${r.jobId}.`, {
          generation: c.generation,
          jobId: r.jobId,
        });
        started(r.jobId);
      } catch (e) {
        started(null);
        throw e;
      }
    });
    const c = this.current!;
    await c.booted;
    const jobId = c.lifecycle === 'running' ? await jobStarted : null;
    return { launch, jobId, lifecycle: c.lifecycle, bootError: c.bootError };
  }

  /** Stops the current computer and frees the backend. */
  async close(): Promise<void> {
    this.closed = true;
    const c = this.current;
    this.current = null;
    await c?.destroy(new PaddockError('NOT_RUNNING', 'The server is shutting down.'));
    await this.options.backend.dispose();
  }

  private readGenerationCounter(): number {
    let last = 0;
    const file = join(this.computersDir, 'generation');
    if (existsSync(file)) last = Number.parseInt(readFileSync(file, 'utf8'), 10) || 0;
    for (const name of readdirSync(this.computersDir)) {
      const m = /^g(\d+)$/.exec(name);
      if (m) last = Math.max(last, Number(m[1]));
    }
    return last;
  }
}
