/**
 * One generation of the computer: its sandbox, its guest link, its jobs. Owned by the
 * ComputerManager; replaced as a whole by a relaunch.
 */
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { CHANNEL_ENV } from '../channel/wire.js';
import type { ProfileConfig } from '../config/computer-schema.js';
import { TOOL_CHANNEL_ROOT } from '../guest/account.js';
import { type FrameKindValue, PROTOCOL_VERSION } from '../guest/frames.js';
import type { CallArgs, CallOp, CallResult, ChannelFrame, Hello } from '../guest/protocol.js';
import { PaddockError } from '../shared/errors.js';
import type { ComputerBackend, SandboxInstance } from './backend/types.js';
import type { ComputerEgress, JobLineage } from './egress.js';
import { Job } from './jobs/job.js';
import { channelDir, nonceMatches, type ToolChannel } from './jobs/tool-channel.js';
import { ChannelRouter } from './link/channel-router.js';
import { type CallOptions, GuestClient, type WithAttachment } from './link/guest-client.js';
import { baseJobEnv } from './link/guest-layout.js';
import type { ComputerLog } from './logs.js';
import { jobShell } from './shell-startup.js';

/** Lifecycle of a generation. */
export type Lifecycle = 'booting' | 'running' | 'error' | 'stopped';

/** Above this many UTF-8 bytes a script goes through a file (argv entries are limited to 128 KiB). */
const INLINE_SCRIPT_MAX_BYTES = 100_000;
const DIAGNOSTIC_TAIL_CHARS = 2000;
/** Finished jobs whose output is kept per generation (each keeps up to the retention per stream). */
export const MAX_FINISHED_JOBS = 200;

/** What a job runs. */
export interface JobSpec {
  script: string;
  cwd: string;
  /** Caller variables, already sanitised by the policy. */
  env: Record<string, string>;
  timeoutMs: number;
  /** Run this argv directly instead of a login-shell script (the `shell` built-in). */
  argv?: string[];
  /** Opens the job's tool channel once its id is known (none: no channel). */
  channel?: (jobId: string) => ToolChannel | null;
  /** Who started the job (its egress connections are attributed to and decided for them). */
  lineage?: JobLineage;
}

export interface ComputerOptions {
  generation: number;
  profile: ProfileConfig;
  backend: ComputerBackend;
  log: ComputerLog;
  hostDir: string;
  retentionBytes: number;
  bootTimeoutMs: number;
  probe: string[];
  /** Settles when the previous generation is gone (a relaunch boots only after it). */
  before?: Promise<void>;
  /** Egress through the host proxy (profiles with network mode "proxy"). */
  egress?: ComputerEgress | null;
}

export class Computer {
  readonly generation: number;
  readonly profile: ProfileConfig;
  lifecycle: Lifecycle = 'booting';
  bootError: string | null = null;
  hello: Hello | null = null;
  instance: SandboxInstance | null = null;
  /** Settles (never rejects) once the boot ended, running or in error. */
  readonly booted: Promise<void>;
  private client: GuestClient | null = null;
  private readonly jobs = new Map<number, Job>();
  private readonly lingering = new Set<Job>();
  /** Finished jobs in the order they ended; the oldest are forgotten beyond MAX_FINISHED_JOBS. */
  private readonly finished: number[] = [];
  private sweeper: NodeJS.Timeout | null = null;
  private nextJob = 1;
  private diagnosticTail = '';
  private readonly startedAt = performance.now();
  /** Terminals and relayed preview connections of this generation (channels that are not jobs). */
  readonly channels = new ChannelRouter();

  constructor(private readonly options: ComputerOptions) {
    this.generation = options.generation;
    this.profile = options.profile;
    this.booted = this.boot();
  }

  /** Whether the generation was stopped or failed (it can change while a boot step awaits). */
  private get ended(): boolean {
    return this.lifecycle === 'stopped' || this.lifecycle === 'error';
  }

  /** Milliseconds the boot took, once running. */
  bootMs: number | null = null;

  private async boot(): Promise<void> {
    const { log, generation } = this.options;
    await this.options.before?.catch(() => undefined);
    if (this.lifecycle !== 'booting') return;
    try {
      const instance = await this.options.backend.launch({
        generation,
        hostDir: this.options.hostDir,
        mounts: this.profile.mounts.map((m) => ({
          source: m.source,
          target: m.target,
          readOnly: m.readOnly,
        })),
        env: baseJobEnv('/bin/sh'),
        limits: this.profile.limits,
        networkMode: this.profile.networkMode,
        probe: this.options.probe,
        files: this.options.egress?.guestFiles() ?? {},
      });
      this.instance = instance;
      if (this.ended) {
        await instance.destroy();
        return;
      }
      instance.diagnostics.on('data', (d: Buffer) => {
        this.diagnosticTail = (this.diagnosticTail + d.toString('utf8')).slice(-DIAGNOSTIC_TAIL_CHARS);
      });
      const hello = new Promise<Hello>((resolve) => {
        this.client = new GuestClient(instance.fromGuest, instance.toGuest, {
          onHello: resolve,
          onEvent: (e) => {
            if (e.t === 'exit') this.onJobExit(e.channel, e.exitCode, e.signal);
            else if (e.t === 'channel.request') this.onChannelRequest(e.channel, e.nonce, e.frame);
            else if (e.t === 'log') log.add(e.level, 'guest.log', e.message, { generation });
            else this.channels.event(e);
          },
          onData: (channel, stream, payload) => {
            if (!this.channels.data(channel, stream, payload)) this.onData(channel, stream, payload);
          },
          onEnd: (channel, stream) => {
            if (!this.channels.end(channel, stream)) this.onEnd(channel, stream);
          },
          onWindow: (channel, stream, bytes) => this.channels.window(channel, stream, bytes),
          onBroken: (reason) => this.fail(`The guest agent broke the protocol (${reason})`),
        });
      });
      void instance.exited.then((how) => this.onSandboxExit(how));
      let timer: NodeJS.Timeout | undefined;
      const timeout = new Promise<never>((_, reject) => {
        timer = setTimeout(
          () => reject(new Error(`no answer from the guest agent within ${this.options.bootTimeoutMs} ms`)),
          this.options.bootTimeoutMs,
        );
      });
      const exitedEarly = instance.exited.then((how) => {
        throw new Error(`the sandbox exited during boot (${describeExit(how)})${this.diagnosticSuffix()}`);
      });
      this.hello = await Promise.race([hello, timeout, exitedEarly]).finally(() => clearTimeout(timer));
      if (this.hello.version !== PROTOCOL_VERSION)
        throw new Error(`the guest agent speaks protocol ${this.hello.version}, not ${PROTOCOL_VERSION}`);
      if (this.ended) return;
      await this.options.egress?.start(this, this.client!);
      if (this.ended) return;
      this.lifecycle = 'running';
      this.bootMs = Math.round(performance.now() - this.startedAt);
      log.add(
        'ok',
        'computer.boot',
        `Generation ${generation} (${this.profile.id}) is running; booted in ${this.bootMs} ms.`,
        { generation },
      );
    } catch (e) {
      const message =
        e instanceof PaddockError
          ? e.message
          : `Boot failed: ${(e as Error).message}. Relaunch the computer; if it keeps failing, run "paddock doctor".`;
      this.fail(message);
    }
  }

  private diagnosticSuffix(): string {
    const tail = this.diagnosticTail.trim();
    return tail ? `; guest output: ${tail.slice(-500)}` : '';
  }

  /** Puts the generation in `error`, fails every pending call and kills what is left. */
  private fail(message: string): void {
    if (this.lifecycle === 'error' || this.lifecycle === 'stopped') return;
    this.lifecycle = 'error';
    this.bootError = message;
    this.options.log.add('err', 'computer.error', message, { generation: this.generation });
    this.client?.fail(
      new PaddockError(
        'NOT_RUNNING',
        `The computer is in error: ${message} Relaunch it with launch_computer.`,
      ),
    );
    this.endAllJobs();
    this.channels.close(message);
    void this.instance?.destroy();
  }

  private onSandboxExit(how: { exitCode: number | null; signal: string | null }): void {
    if (this.lifecycle === 'stopped' || this.lifecycle === 'error') return;
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
  sendFrame(kind: FrameKindValue, channel: number, stream: number, payload: Buffer): boolean {
    if (this.lifecycle !== 'running' || !this.client) return false;
    return this.client.sendFrame(kind, channel, stream, payload);
  }

  /** Starts a job; resolves once it runs in its own family. */
  async startJob(spec: JobSpec, retentionBytes: number): Promise<Job> {
    const client = this.link();
    const instance = this.instance!;
    const n = this.nextJob++;
    const job = new Job(`g${this.generation}.job${n}`, this.generation, n, retentionBytes);
    const shell = this.hello?.shell ?? '/bin/sh';
    let started = spec.argv ? { argv: spec.argv, env: {} } : jobShell(shell, { script: spec.script });
    if (!spec.argv && Buffer.byteLength(spec.script) > INLINE_SCRIPT_MAX_BYTES) {
      // in the agent's own directory: readable by the job, changeable by no job
      const file = `${TOOL_CHANNEL_ROOT}/job-${n}.sh`;
      await client.call(
        'fs.write',
        { path: file, overwrite: false },
        { attachment: Buffer.from(spec.script) },
      );
      started = jobShell(shell, { file });
    }
    this.jobs.set(n, job);
    const channel = spec.channel?.(job.id) ?? null;
    job.toolChannel = channel;
    const channelEnv: Record<string, string> = channel
      ? {
          [CHANNEL_ENV.nonce]: channel.nonce,
          [CHANNEL_ENV.dir]: channelDir(n),
          [CHANNEL_ENV.deadline]: String(Date.now() + spec.timeoutMs),
        }
      : {};
    // a channel needs the job held until its stderr is identified; cgroups need it anyway
    const hold = instance.familyMechanism === 'cgroup' || channel !== null;
    try {
      const { pid } = await client.call('exec', {
        channel: n,
        argv: started.argv,
        cwd: spec.cwd,
        env: {
          ...baseJobEnv(shell),
          ...this.profile.env,
          ...spec.env,
          ...channelEnv,
          ...this.egressEnv(job.id, spec.lineage),
          ...started.env,
        },
        rlimits: instance.jobRlimits,
        hold,
        newSession: true,
        // the shell built-in's cwd was checked by the policy: no link may be swapped into it
        ...(spec.argv ? { strictCwd: true } : {}),
        ...(channel ? { toolChannel: { nonce: channel.nonce, dir: channelDir(n) } } : {}),
      });
      if (instance.familyMechanism === 'cgroup') {
        try {
          job.family = await instance.adoptJob(`job${n}`, pid, this.hello!.pid);
        } catch (e) {
          await client.call('signal', { channel: n, signal: 'SIGKILL', group: false }).catch(() => undefined);
          throw e;
        }
      }
      if (hold) await client.call('release', { channel: n });
    } catch (e) {
      this.jobs.delete(n);
      channel?.close();
      throw e;
    }
    job.timeoutTimer = setTimeout(() => void this.onTimeout(job), spec.timeoutMs);
    job.timeoutTimer.unref();
    this.options.log.add(
      'info',
      'job.start',
      `${job.id} started: ${summarize(spec.argv ? spec.argv.join(' ') : spec.script)}`,
      {
        generation: this.generation,
        jobId: job.id,
      },
    );
    return job;
  }

  /** The proxy variables of a job or terminal (none without egress). */
  egressEnv(id: string, lineage?: JobLineage): Record<string, string> {
    return this.options.egress?.env(id, lineage) ?? {};
  }

  /** A job of this generation by its number. */
  job(n: number): Job | undefined {
    return this.jobs.get(n);
  }

  /** Whether job `n` existed in this generation (it may have been forgotten since). */
  hadJob(n: number): boolean {
    return n >= 1 && n < this.nextJob;
  }

  /** Kills a job's whole family. */
  async killFamily(job: Job): Promise<void> {
    if (job.family) {
      await job.family.kill();
      return;
    }
    // Without a cgroup the family is the job's session: signal its group a few times, since
    // members may still be forking while the first signal is delivered.
    for (let round = 0; round < 3 && this.client?.alive; round++) {
      await this.client
        .call('signal', { channel: job.channel, signal: 'SIGKILL', group: true })
        .catch(() => undefined);
      await new Promise((r) => setTimeout(r, 20));
    }
  }

  /** True when the job's root exited and no process of its family is left. */
  familyGone(job: Job): boolean {
    if (!job.terminationObserved) return false;
    return job.family ? job.family.isEmpty() : true;
  }

  private async onTimeout(job: Job): Promise<void> {
    if (this.familyGone(job) || this.lifecycle !== 'running') return;
    job.timedOut = true;
    this.options.log.add(
      'warn',
      'job.timeout',
      `${job.id} ran past its timeout; its whole process family was killed.`,
      {
        generation: this.generation,
        jobId: job.id,
      },
    );
    await this.killFamily(job);
  }

  private onData(channel: number, stream: number, payload: Buffer): void {
    const job = this.jobs.get(channel);
    if (!job) return;
    if (stream === 1) job.stdout.append(payload);
    else if (stream === 2) job.stderr.append(payload);
  }

  private onEnd(channel: number, stream: number): void {
    const job = this.jobs.get(channel);
    if (!job) return;
    if (stream === 1) job.ended.stdout = true;
    else if (stream === 2) job.ended.stderr = true;
  }

  /** A tool-channel frame from a job: answered through the job's channel, replied into its FIFO. */
  private onChannelRequest(n: number, nonce: string, frame: ChannelFrame): void {
    const job = this.jobs.get(n);
    const channel = job?.toolChannel;
    if (!job || !channel) return;
    // The host made the nonce for this job: a frame with any other is never answered.
    if (!nonceMatches(nonce, channel.nonce)) {
      this.options.log.add('warn', 'channel.forged', `${job.id}: a channel frame carried another nonce.`, {
        jobId: job.id,
      });
      return;
    }
    void channel.handle(frame).then(
      (line) => {
        job.toolCalls = channel.toolCalls;
        if (line === null || frame.id === null || !this.client?.alive) return;
        void this.client
          .call('channel.reply', { channel: n, id: frame.id, body: line })
          .catch(() => undefined);
      },
      (e: unknown) =>
        this.options.log.add('err', 'channel.failed', `${job.id}: ${(e as Error).message}`, {
          jobId: job.id,
        }),
    );
  }

  private onJobExit(channel: number, exitCode: number | null, signal: string | null): void {
    const job = this.jobs.get(channel);
    job?.toolChannel?.close();
    if (!job || job.terminationObserved) return;
    job.observeExit(exitCode, signal);
    const how = signal ? `was killed by ${signal}` : `exited with code ${exitCode}`;
    const level = exitCode === 0 ? 'ok' : 'info';
    this.options.log.add(level, 'job.exit', `${job.id} ${how} after ${job.durationMs} ms.`, {
      generation: this.generation,
      jobId: job.id,
    });
    this.settle(job);
  }

  /** Frees a job's family once it is empty; families that outlive their root are re-checked. */
  private settle(job: Job): void {
    if (job.family && !job.family.isEmpty()) {
      this.lingering.add(job);
      this.sweeper ??= setInterval(() => this.sweep(), 1000);
      this.sweeper.unref();
      return;
    }
    if (job.timeoutTimer) clearTimeout(job.timeoutTimer);
    void job.family?.dispose();
    this.finished.push(job.channel);
    while (this.finished.length > MAX_FINISHED_JOBS) this.jobs.delete(this.finished.shift()!);
  }

  private sweep(): void {
    for (const job of this.lingering) {
      if (job.family && !job.family.isEmpty()) continue;
      this.lingering.delete(job);
      this.settle(job);
    }
    if (this.lingering.size === 0 && this.sweeper) {
      clearInterval(this.sweeper);
      this.sweeper = null;
    }
  }

  private endAllJobs(): void {
    for (const job of this.jobs.values()) {
      if (job.timeoutTimer) clearTimeout(job.timeoutTimer);
      if (!job.terminationObserved) job.observeExit(null, 'SIGKILL');
    }
    if (this.sweeper) clearInterval(this.sweeper);
    this.sweeper = null;
    this.lingering.clear();
  }

  /** Kills everything of this generation and removes its host directory. */
  async destroy(reason: PaddockError): Promise<void> {
    if (this.lifecycle !== 'error') this.lifecycle = 'stopped';
    this.client?.fail(reason);
    this.endAllJobs();
    this.channels.close(reason.message);
    await this.instance?.destroy();
    await rm(this.options.hostDir, { recursive: true, force: true }).catch(() => undefined);
  }

  /** Host path of this generation's workspace (diagnostics and tests). */
  get hostWorkspace(): string {
    return this.instance?.hostWorkspace ?? join(this.options.hostDir, 'workspace');
  }
}

function describeExit(how: { exitCode: number | null; signal: string | null }): string {
  return how.signal ? `signal ${how.signal}` : `exit code ${how.exitCode}`;
}

function summarize(text: string): string {
  const line = text.replace(/\s+/g, ' ').trim();
  return line.length > 120 ? `${line.slice(0, 117)}...` : line;
}
