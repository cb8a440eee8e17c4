/**
 * One generation of a computer: its sandbox, its guest link and what runs in it. The computer
 * boots the sandbox, speaks to its guest agent and routes the guest's events — job events to
 * its JobTable, terminals and relayed connections to its StreamRouter. Owned by a
 * ComputerManager; replaced as a whole by a relaunch.
 */
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { ProfileConfig } from '../../config/computer-schema.js';
import type { FrameKindValue } from '../../guest/frames.js';
import type { CallArgs, CallOp, CallResult, GuestEvent, Hello } from '../../guest/protocol.js';
import { PaddockError } from '../../shared/errors.js';
import type { ComputerBackend, SandboxImage, SandboxInstance } from '../backend/types.js';
import { type ImageIdentity, imageIdentityOf } from '../checkpoints/types.js';
import type { ComputerEvent, Lifecycle } from '../events.js';
import { JobTable } from '../jobs/job-table.js';
import { ListeningTable } from '../jobs/listening-ports.js';
import type { CallOptions, GuestClient, WithAttachment } from '../link/guest-client.js';
import { StreamRouter } from '../link/stream-router.js';
import type { ComputerLog } from '../logs.js';
import { NETWORK_NONE_RULE, offlineJob, offlineLine, startOfflineResolver } from '../offline-network.js';
import { type BootedSandbox, bootSandbox, describeExit, sandboxSpec } from './boot.js';
import type { ComputerEgress } from './egress.js';
import type { JobLineage } from './egress-types.js';

export type { Lifecycle } from '../events.js';

export interface GenerationOptions {
  /** The computer's name in events (the key its manager is known by). */
  name: string;
  generation: number;
  profile: ProfileConfig;
  backend: ComputerBackend;
  log: ComputerLog;
  /** Host directory of this generation (removed with it). */
  hostDir: string;
  /** Host directory of the workspace kept across generations (never removed with one). */
  keptDir?: string;
  retentionBytes: number;
  bootTimeoutMs: number;
  /** A sandbox from the warm pool to run on instead of booting one (it is this generation's alone). */
  warm?: BootedSandbox | null;
  /** Settles when the previous generation is gone (a relaunch boots only after it). */
  before?: Promise<void>;
  /** Egress through the host proxy (profiles with network mode "proxy"). */
  egress?: ComputerEgress | null;
  /** The profile's image as the backend mounts it (absent: the host's directories). */
  image?: SandboxImage | undefined;
  /** A restored root layer on the host, laid onto the fresh disk at launch (removed once booted). */
  seedRoot?: string;
  emit(event: ComputerEvent): void;
}

export class Generation {
  readonly generation: number;
  readonly profile: ProfileConfig;
  lifecycle: Lifecycle = 'booting';
  bootError: string | null = null;
  hello: Hello | null = null;
  instance: SandboxInstance | null = null;
  /** Milliseconds the boot took, once running. */
  bootMs: number | null = null;
  /** Where the sandbox came from once booted: `warm` (taken from the pool) or `cold` (booted for it). */
  bootSource: 'warm' | 'cold' | null = null;
  /** Settles (never rejects) once the boot ended, running or in error. */
  readonly booted: Promise<void>;
  /** The jobs of this generation. */
  readonly jobs: JobTable;
  /** Terminals and relayed preview connections of this generation (streams that are not jobs). */
  readonly streams = new StreamRouter();
  /** What listens in this generation's network, for its views (read at most every 250 ms). */
  readonly listening = new ListeningTable(() =>
    this.lifecycle === 'running' && this.instance ? this.instance.hostPid : null,
  );
  private client: GuestClient | null = null;
  private sandbox: BootedSandbox | null = null;
  /** Cancels a cold boot that is still waiting for the guest (stop or shutdown). */
  private readonly abort = new AbortController();
  private readonly startedAt = performance.now();
  /** When this generation was launched (epoch ms): the file browser's "changed since launch". */
  readonly launchedAt = Date.now();

  constructor(private readonly options: GenerationOptions) {
    this.generation = options.generation;
    this.profile = options.profile;
    this.jobs = new JobTable({
      computer: options.name,
      generation: options.generation,
      retentionBytes: options.retentionBytes,
      log: options.log,
      guest: () => {
        const client = this.link();
        return { client, instance: this.instance!, hello: this.hello! };
      },
      client: () => (this.lifecycle === 'running' && this.client?.alive ? this.client : null),
      profileEnv: options.profile.env,
      egressEnv: (id, lineage) => this.egressEnv(id, lineage),
      emit: options.emit,
    });
    this.booted = this.boot();
  }

  /** Whether the generation was stopped or failed (it can change while a boot step awaits). */
  private get ended(): boolean {
    return this.lifecycle === 'stopped' || this.lifecycle === 'error';
  }

  private async boot(): Promise<void> {
    const { log, generation, warm } = this.options;
    await this.options.before?.catch(() => undefined);
    if (this.lifecycle !== 'booting') {
      // a taken warm sandbox is never handed back: it goes with the generation that took it
      await warm?.destroy();
      return;
    }
    try {
      const sandbox =
        warm ??
        (await bootSandbox(
          this.options.backend,
          sandboxSpec(
            this.profile,
            {
              generation,
              hostDir: this.options.hostDir,
              ...(this.options.keptDir ? { keptDir: this.options.keptDir } : {}),
              ...(this.options.seedRoot ? { seedRoot: this.options.seedRoot } : {}),
            },
            this.options.egress?.guestFiles() ?? {},
            this.options.image,
          ),
          { timeoutMs: this.options.bootTimeoutMs, signal: this.abort.signal },
        ));
      this.sandbox = sandbox;
      this.instance = sandbox.instance;
      // the launch copied the restored root layer onto the disk: the host copy has served
      if (this.options.seedRoot) await rm(this.options.seedRoot, { recursive: true, force: true });
      this.client = sandbox.client;
      this.hello = sandbox.hello;
      this.bootSource = warm ? 'warm' : 'cold';
      if (this.ended) {
        await sandbox.destroy();
        return;
      }
      sandbox.attach({
        onEvent: (e) => this.route(e),
        onData: (stream, fd, payload) => {
          if (!this.streams.data(stream, fd, payload)) this.jobs.onData(stream, fd, payload);
        },
        onEnd: (stream, fd) => {
          if (!this.streams.end(stream, fd)) this.jobs.onEnd(stream, fd);
        },
        onWindow: (stream, fd, bytes) => this.streams.window(stream, fd, bytes),
        onBroken: (reason) => this.fail(`The guest agent broke the protocol (${reason})`),
      });
      void sandbox.instance.exited.then((how) => this.onSandboxExit(how));
      if (this.options.egress) await this.options.egress.start(this, this.client);
      else if (this.profile.network.mode === 'none') {
        await startOfflineResolver(this.client, log, generation);
      }
      if (this.ended) return;
      this.lifecycle = 'running';
      this.bootMs = Math.round(performance.now() - this.startedAt);
      log.add(
        'ok',
        'computer.boot',
        `Generation ${generation} (${this.profile.id}) is running; booted in ${this.bootMs} ms${warm ? ' from a warm sandbox' : ''}.`,
        { generation },
      );
      const quota = sandbox.instance.diskQuota;
      if (quota && !quota.enforced) {
        log.add(
          'warn',
          'computer.disk_quota',
          `The disk limit of ${this.profile.limits.diskMb} MiB is ${quota.detail}.`,
          { generation },
        );
      }
      if (sandbox.hello.jobIsolation === 'none') {
        log.add(
          'warn',
          'computer.isolation',
          'Jobs and terminals of this computer share one Landlock domain: the kernel refused a domain per job (Linux 5.19 or newer with Landlock enabled is needed), so a job could read the memory of another job running as the same account.',
          { generation },
        );
      }
      this.emitLifecycle();
    } catch (e) {
      const message =
        e instanceof PaddockError
          ? e.message
          : `Boot failed: ${(e as Error).message}. Relaunch the computer; if it keeps failing, run "paddock doctor".`;
      this.fail(message);
    }
  }

  /** A guest event: job events to the job table, terminal and relay events to their owners. */
  private route(e: GuestEvent): void {
    if (e.t === 'exit') this.jobs.onExit(e.stream, e.exitCode, e.signal);
    else if (e.t === 'channel.request') this.jobs.onChannelRequest(e.stream, e.nonce, e.frame);
    else if (e.t === 'log')
      this.options.log.add(e.level, 'guest.log', e.message, { generation: this.generation });
    else if (e.t === 'net.offline') this.onOfflineLookup(e);
    else this.streams.event(e);
  }

  /** A lookup in a computer without network: the job that made it reads why. */
  private onOfflineLookup(e: Extract<GuestEvent, { t: 'net.offline' }>): void {
    const jobId = offlineJob(e, (name) => this.jobs.idOfFamily(name));
    const line = offlineLine(e.name, this.profile.id);
    this.options.log.add('warn', 'egress.offline', line, {
      generation: this.generation,
      ...(jobId ? { jobId } : {}),
    });
    if (jobId) this.jobs.noteEgressRefused(jobId, { host: e.name, port: 0, rule: NETWORK_NONE_RULE }, line);
  }

  private diagnosticSuffix(): string {
    return this.sandbox?.diagnosticSuffix() ?? '';
  }

  /** Puts the generation in `error`, fails every pending call and kills what is left. */
  private fail(message: string): void {
    if (this.ended) return;
    this.lifecycle = 'error';
    this.bootError = message;
    this.options.log.add('err', 'computer.error', message, { generation: this.generation });
    this.client?.fail(
      new PaddockError(
        'NOT_RUNNING',
        `The computer is in error: ${message} Relaunch it with launch_computer.`,
      ),
    );
    this.jobs.endAll();
    this.streams.close(message);
    this.abort.abort();
    void this.instance?.destroy();
    this.emitLifecycle();
  }

  private onSandboxExit(how: { exitCode: number | null; signal: string | null }): void {
    if (this.ended) return;
    this.fail(`The guest agent exited (${describeExit(how)})${this.diagnosticSuffix()}.`);
  }

  /** The guest link; NOT_RUNNING unless the generation is running. */
  private link(): GuestClient {
    if (this.lifecycle === 'running' && this.client?.alive) return this.client;
    if (this.lifecycle === 'booting') {
      throw new PaddockError(
        'NOT_RUNNING',
        `Generation ${this.generation} is still booting; poll get_computer_status until it is running.`,
      );
    }
    throw new PaddockError(
      'NOT_RUNNING',
      `Generation ${this.generation} is ${this.lifecycle}${this.bootError ? ` (${this.bootError})` : ''}; launch a new computer with launch_computer.`,
    );
  }

  /** A call to the guest agent of this generation. */
  call<Op extends CallOp>(
    op: Op,
    args: CallArgs<Op>,
    options?: CallOptions,
  ): Promise<WithAttachment<CallResult<Op>>> {
    return this.link().call(op, args, options);
  }

  /** Sends a stream frame on a terminal or relay channel; false when not running or congested. */
  sendFrame(kind: FrameKindValue, stream: number, fd: number, payload: Buffer): boolean {
    if (this.lifecycle !== 'running' || !this.client) return false;
    return this.client.sendFrame(kind, stream, fd, payload);
  }

  /** The proxy variables of a job or terminal (none without egress). */
  egressEnv(id: string, lineage?: JobLineage): Record<string, string> {
    return this.options.egress?.env(id, lineage) ?? {};
  }

  /** Withdraws the egress proxy credentials of job or terminal `id`; whether it had any. */
  revokeEgress(id: string): boolean {
    return this.options.egress?.revoke(id) ?? false;
  }

  /** Kills everything of this generation and removes its host directory (never a kept workspace). */
  async destroy(reason: PaddockError): Promise<void> {
    const was = this.lifecycle;
    if (this.lifecycle !== 'error') this.lifecycle = 'stopped';
    this.client?.fail(reason);
    this.jobs.endAll();
    this.streams.close(reason.message);
    if (was !== this.lifecycle) this.emitLifecycle();
    this.abort.abort();
    await this.booted;
    await this.instance?.destroy();
    await rm(this.options.hostDir, { recursive: true, force: true }).catch(() => undefined);
  }

  /**
   * Where the host reaches this generation's /workspace while it runs (diagnostics and tests);
   * see SandboxInstance.hostWorkspace.
   */
  get hostWorkspace(): string {
    return this.instance?.hostWorkspace ?? join(this.options.keptDir ?? this.options.hostDir, 'workspace');
  }

  /**
   * The writable root layer of a computer on an image while it runs: where the host reaches the
   * overlay's upper directory, and the image beneath it; null without an image (or not running).
   */
  get rootLayer(): { path: string; image: ImageIdentity } | null {
    const layer = this.instance?.rootLayer;
    return layer ? { path: layer.hostPath, image: imageIdentityOf(layer.image) } : null;
  }

  /** Tells subscribers where the generation stands (the manager announces a launch with it). */
  emitLifecycle(): void {
    this.options.emit({
      type: 'lifecycle',
      computer: this.options.name,
      generation: this.generation,
      profileId: this.profile.id,
      lifecycle: this.lifecycle,
      bootError: this.bootError,
      bootSource: this.bootSource,
    });
  }
}
