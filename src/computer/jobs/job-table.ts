import { Fd } from '../../guest/frames.js';
import type { ChannelFrame } from '../../guest/protocol.js';
import { sleep } from '../../shared/abort.js';
import { PaddockError } from '../../shared/errors.js';
import type { JobFamily } from '../backend/types.js';
import type { ComputerEvent } from '../events.js';
import type { JobLineage } from '../generation/egress-types.js';
import { jobId } from '../ids.js';
import type { GuestClient } from '../link/guest-client.js';
import { GUEST_WORKSPACE } from '../link/guest-layout.js';
import type { ComputerLog } from '../logs.js';
import { checkGuestPath } from '../paths.js';
import { Job, type JobResult } from './job.js';
import { type ExecArgs, execArgsOf } from './job-exec.js';
import type { JobGuest } from './job-guest.js';
import {
  type CancelResult,
  checkEnv,
  MAX_SCRIPT_BYTES,
  RUN_COMMAND_OUTPUT_BYTES,
  type RunRequest,
  summarizeCommand,
} from './requests.js';
import { SpareShell, spareCanRun } from './spare-shell.js';
import { nonceMatches, type ToolChannel } from './tool-channel.js';

/** Finished jobs whose output is kept per generation (each keeps up to the retention per stream). */
export const MAX_FINISHED_JOBS = 200;
/** How long cancel waits for a family to be gone before answering `cancelling`. */
const CANCEL_WAIT_MS = 1000;

export type { JobGuest };

export interface JobTableOptions {
  generation: number;
  retentionBytes: number;
  log: ComputerLog;
  /** The running guest; throws NOT_RUNNING otherwise. */
  guest(): JobGuest;
  /** The guest link while it is alive (for best-effort kills), else null. */
  client(): GuestClient | null;
  /** Environment of every job from the profile. */
  profileEnv: Record<string, string>;
  /** The proxy variables of a job (none without egress). */
  egressEnv(id: string, lineage?: JobLineage): Record<string, string>;
  emit(event: ComputerEvent): void;
  /** The computer's name in events. */
  computer: string;
}

/** Per job: what only the table touches. */
interface Held {
  job: Job;
  family: JobFamily | null;
  channel: ToolChannel | null;
  timer: NodeJS.Timeout | null;
  /** Prepare the next spare shell when this job exits (see SpareShell.prepare). */
  spareNext?: boolean;
}

export class JobTable {
  private readonly jobs = new Map<number, Held>();
  private readonly lingering = new Set<Held>();
  /** Finished jobs in the order they ended; the oldest are forgotten beyond MAX_FINISHED_JOBS. */
  private readonly finished: number[] = [];
  private sweeper: NodeJS.Timeout | null = null;
  private nextJob = 1;
  private readonly spare: SpareShell;

  constructor(private readonly options: JobTableOptions) {
    this.spare = new SpareShell(() => options.guest());
  }

  /** run_command: checks the request, starts the job and waits up to `waitMs` for it. */
  async run(
    req: RunRequest,
    signal?: AbortSignal,
    openChannel?: (jobId: string) => ToolChannel | null,
  ): Promise<JobResult> {
    const cwd = checkGuestPath(req.cwd ?? GUEST_WORKSPACE, 'cwd');
    const env = checkEnv(req.env ?? {});
    if (Buffer.byteLength(req.script) > MAX_SCRIPT_BYTES) {
      throw new PaddockError(
        'INVALID_ARGUMENT',
        `The script is larger than ${MAX_SCRIPT_BYTES} bytes of UTF-8; write it to a file with write_file and run the file.`,
      );
    }
    const job = await this.start(req, cwd, env, openChannel);
    await job.waitForExit(req.waitMs, signal);
    return job.read(undefined, req.outputBytes ?? RUN_COMMAND_OUTPUT_BYTES);
  }

  /** A job of this generation by its number. */
  get(n: number): Job | undefined {
    return this.jobs.get(n)?.job;
  }

  /** Whether job `n` existed in this generation (it may have been forgotten since). */
  had(n: number): boolean {
    return n >= 1 && n < this.nextJob;
  }

  /** Jobs still known, oldest first. */
  list(): Job[] {
    return [...this.jobs.values()].map((h) => h.job);
  }

  /** The job whose family is the cgroup named `name` (as a process in the computer sees it). */
  idOfFamily(name: string): string | null {
    for (const held of this.jobs.values()) if (held.family?.name === name) return held.job.id;
    for (const held of this.lingering) if (held.family?.name === name) return held.job.id;
    return null;
  }

  /** A refused egress connection of job `id`: listed in its result, a line in its stderr. */
  noteEgressRefused(id: string, refused: { host: string; port: number; rule: string }, line: string): void {
    for (const held of this.jobs.values()) {
      if (held.job.id === id) {
        held.job.noteEgressRefused(refused, line);
        return;
      }
    }
  }

  /** Host pids of a job's family (null without host-side families); diagnostics and tests. */
  hostPids(job: Job): number[] | null {
    return this.jobs.get(job.n)?.family?.hostPids() ?? null;
  }

  /** Whether no process of a job's host-side family is left (null without such families). */
  familyEmpty(job: Job): boolean | null {
    const family = this.jobs.get(job.n)?.family;
    return family ? family.isEmpty() : null;
  }

  /** Kills a job and every descendant; `cancelling` when they are not all gone within a second. */
  async cancel(job: Job): Promise<CancelResult> {
    const held = this.jobs.get(job.n);
    const shape = (status: CancelResult['status']): CancelResult => ({
      jobId: job.id,
      status,
      exitCode: job.exitCode,
      signal: job.signal,
      canceled: job.canceled,
      terminationObserved: job.terminationObserved,
    });
    if (!held) return shape('already_finished');
    if (this.familyGone(held)) {
      // Without a cgroup a finished root may have left members in its session: reach them anyway.
      if (!held.family) await this.killFamily(held);
      return shape('already_finished');
    }
    job.markCanceled();
    await this.killFamily(held);
    this.log('warn', 'job.cancel', `${job.id} was cancelled with every descendant.`, job.id);
    const deadline = Date.now() + CANCEL_WAIT_MS;
    while (Date.now() < deadline && !this.familyGone(held)) await sleep(5);
    return shape(this.familyGone(held) ? 'cancelled' : 'cancelling');
  }

  /**
   * Ends a job's tool channel before the job itself ends (its caller was revoked): every later
   * call is refused with `reason`, calls under way are cancelled. Whether it had one.
   */
  closeChannel(job: Job, reason: PaddockError): boolean {
    const channel = this.jobs.get(job.n)?.channel;
    channel?.close(reason);
    return channel !== undefined && channel !== null;
  }

  /** Bytes from the guest on one of a job's fds (stdout 1, stderr 2). */
  onData(n: number, fd: number, payload: Buffer): void {
    const job = this.jobs.get(n)?.job;
    const name = fd === Fd.Stdout ? 'stdout' : fd === Fd.Stderr ? 'stderr' : null;
    if (!job || !name) return;
    job.append(name, payload);
    this.options.emit({
      type: 'job.output',
      computer: this.options.computer,
      generation: this.options.generation,
      jobId: job.id,
      fd: name,
      bytes: payload.length,
    });
  }

  /** One of a job's fds ended. */
  onEnd(n: number, fd: number): void {
    const job = this.jobs.get(n)?.job;
    if (!job) return;
    if (fd === Fd.Stdout) job.endStream('stdout');
    else if (fd === Fd.Stderr) job.endStream('stderr');
  }

  /** A job's root exited. */
  onExit(n: number, exitCode: number | null, signal: string | null): void {
    if (this.spare.onExit(n)) return;
    const held = this.jobs.get(n);
    held?.channel?.close();
    if (!held || held.job.terminationObserved) return;
    const { job } = held;
    job.observeExit(exitCode, signal);
    const how = signal ? `was killed by ${signal}` : `exited with code ${exitCode}`;
    this.log(
      exitCode === 0 ? 'ok' : 'info',
      'job.exit',
      `${job.id} ${how} after ${job.durationMs} ms.`,
      job.id,
    );
    this.emitExit(job);
    this.settle(held);
    if (held.spareNext) this.spare.prepare();
  }

  /** A tool-channel frame from a job: answered through the job's channel, replied into its FIFO. */
  onChannelRequest(n: number, nonce: string, frame: ChannelFrame): void {
    const held = this.jobs.get(n);
    const channel = held?.channel;
    if (!held || !channel) return;
    const { job } = held;
    // The host made the nonce for this job: a frame with any other is never answered.
    if (!nonceMatches(nonce, channel.nonce)) {
      this.log('warn', 'channel.forged', `${job.id}: a channel frame carried another nonce.`, job.id);
      return;
    }
    void channel.handle(frame).then(
      (line) => {
        job.noteToolCalls(channel.toolCalls);
        const client = this.options.client();
        if (line === null || frame.id === null || !client) return;
        client.tell('channel.reply', { stream: n, id: frame.id, body: line });
      },
      (e: unknown) => this.log('err', 'channel.failed', `${job.id}: ${(e as Error).message}`, job.id),
    );
  }

  /** The generation ended: every job's root counts as killed, timers and sweeps stop. */
  endAll(): void {
    this.spare.close();
    for (const held of this.jobs.values()) {
      if (held.timer) clearTimeout(held.timer);
      held.channel?.close();
      if (!held.job.terminationObserved) {
        held.job.observeExit(null, 'SIGKILL');
        this.emitExit(held.job);
      }
    }
    if (this.sweeper) clearInterval(this.sweeper);
    this.sweeper = null;
    this.lingering.clear();
  }

  /** Starts a job; resolves once it runs in its own family. */
  private async start(
    req: RunRequest,
    cwd: string,
    env: Record<string, string>,
    openChannel?: (jobId: string) => ToolChannel | null,
  ): Promise<Job> {
    const { client, instance, hello } = this.options.guest();
    const { generation } = this.options;
    const n = this.nextJob++;
    const command = summarizeCommand(req);
    const job = new Job(jobId(generation, n), generation, n, this.options.retentionBytes, command, req);
    const channel = openChannel?.(job.id) ?? null;
    const held: Held = { job, family: null, channel, timer: null };
    this.jobs.set(n, held);
    let execArgs: ExecArgs;
    try {
      execArgs = await execArgsOf(req, n, cwd, env, {
        client,
        instance,
        shell: hello.shell ?? '/bin/sh',
        channel,
        profileEnv: this.options.profileEnv,
        egressEnv: () => this.options.egressEnv(job.id, req.channel),
      });
    } catch (e) {
      this.jobs.delete(n);
      channel?.close();
      throw e;
    }
    // scripts (the common job) take the spare shell, started and placed in its family ahead
    const usesSpare = !req.argv && spareCanRun(req.script);
    held.spareNext = usesSpare; // set now: a quick job exits before `exec` answers
    try {
      held.family = (await this.spare.startJob(execArgs, usesSpare)).family;
    } catch (e) {
      this.jobs.delete(n);
      channel?.close();
      throw e;
    }
    // a service runs until cancel_job, a relaunch or the end of its computer
    if (!job.background) held.timer = setTimeout(() => void this.onTimeout(held), req.timeoutMs).unref();
    this.log('info', 'job.start', `${job.id} started: ${command}`, job.id);
    this.options.emit({
      type: 'job.started',
      computer: this.options.computer,
      generation,
      jobId: job.id,
      command,
    });
    return job;
  }

  /** Kills a job's whole family. */
  private async killFamily(held: Held): Promise<void> {
    if (held.family) {
      await held.family.kill();
      return;
    }
    // Without a cgroup the family is the job's session: signal its group a few times, since
    // members may still be forking while the first signal is delivered.
    for (let round = 0; round < 3; round++) {
      const client = this.options.client();
      if (!client) return;
      await client
        .call('signal', { stream: held.job.n, signal: 'SIGKILL', group: true })
        .catch(() => undefined);
      await sleep(20);
    }
  }

  /** True when the job's root exited and no process of its family is left. */
  private familyGone(held: Held): boolean {
    if (!held.job.terminationObserved) return false;
    return held.family ? held.family.isEmpty() : true;
  }

  private async onTimeout(held: Held): Promise<void> {
    if (this.familyGone(held) || !this.options.client()) return;
    held.job.markTimedOut();
    this.log(
      'warn',
      'job.timeout',
      `${held.job.id} ran past its timeout; its whole process family was killed.`,
      held.job.id,
    );
    await this.killFamily(held);
  }

  /** Frees a job's family once it is empty; families that outlive their root are re-checked. */
  private settle(held: Held): void {
    if (held.family && !held.family.isEmpty()) {
      this.lingering.add(held);
      this.sweeper ??= setInterval(() => this.sweep(), 1000);
      this.sweeper.unref();
      return;
    }
    if (held.timer) clearTimeout(held.timer);
    void held.family?.dispose();
    this.finished.push(held.job.n);
    while (this.finished.length > MAX_FINISHED_JOBS) this.jobs.delete(this.finished.shift()!);
  }

  private sweep(): void {
    for (const held of this.lingering) {
      if (held.family && !held.family.isEmpty()) continue;
      this.lingering.delete(held);
      this.settle(held);
    }
    if (this.lingering.size === 0 && this.sweeper) {
      clearInterval(this.sweeper);
      this.sweeper = null;
    }
  }

  private emitExit(job: Job): void {
    const { computer, generation } = this.options;
    const { id: jobId, exitCode, signal, timedOut, canceled } = job;
    const event = { computer, generation, jobId, exitCode, signal, timedOut, canceled };
    this.options.emit({ type: 'job.exited', ...event });
  }

  private log(level: 'info' | 'ok' | 'warn' | 'err', event: string, message: string, jobId: string): void {
    this.options.log.add(level, event, message, { generation: this.options.generation, jobId });
  }
}
