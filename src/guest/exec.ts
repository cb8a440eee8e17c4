/**
 * Jobs inside the guest: spawn, hold until the host has placed the process in its family,
 * stream stdout/stderr as data frames, report the root's exit.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { closeSync, mkdirSync } from 'node:fs';
import { stat } from 'node:fs/promises';
import { join } from 'node:path';
import {
  type JobAccount,
  SHELL_ID_PREFIX,
  SHELL_POOL_SUFFIX,
  scopedArgv,
  spawnIdentity,
  TOOL_CHANNEL_ROOT,
} from './account.js';
import { writeReply } from './channel-reply.js';
import type { ChannelScanner } from './channel-scanner.js';
import { type ConfineRequest, confinedArgv, confineTokens } from './confine.js';
import { GuestFailure } from './failure.js';
import { openDirNoFollow } from './fs-walk.js';
import { jobChannel } from './job-channel.js';
import { EXPORTABLE_NAME, spareArgv, spareJob, wrapperScript } from './job-scripts.js';
import { JobStreams, type RunningJob, type StreamFilter } from './job-streams.js';
import type { GuestLink } from './link.js';
import type { CallArgs } from './protocol.js';
import { type JobChild, SpawnedProcess, type Spawner } from './spawner.js';
import {
  type Outputs,
  type StdioPipe,
  type StdioPipes,
  spawnerOutputs,
  spawnWithPipes,
} from './stdio-pipes.js';

/** The jobs of this agent, by channel. */
export class JobRunner {
  private readonly jobs = new Map<number, RunningJob>();
  /** Process group (= session) id of every job started in a new session, by channel. */
  private readonly groups = new Map<number, number>();
  private readonly streams: JobStreams;

  constructor(
    private readonly link: GuestLink,
    private readonly account: JobAccount | null = null,
    private readonly scope: string | null = null,
    private readonly spawner: Spawner | null = null,
    private readonly pipes: StdioPipes | null = null,
  ) {
    mkdirSync(TOOL_CHANNEL_ROOT, { recursive: true, mode: 0o711 });
    this.streams = new JobStreams(link, (job) => {
      if (this.jobs.get(job.stream) === job) this.jobs.delete(job.stream);
    });
  }

  /** Starts a job; resolves with its pid once spawned (held jobs wait for `release`). */
  async exec(args: CallArgs<'exec'>): Promise<{ pid: number }> {
    if (this.jobs.has(args.stream)) {
      throw new GuestFailure(
        'INVALID_ARGUMENT',
        `Channel ${args.stream} is already in use; use a new stream id.`,
      );
    }
    const missing = () =>
      new GuestFailure(
        'NOT_FOUND',
        `The working directory ${args.cwd} does not exist in the computer (or is not a directory); create it first or pass another cwd.`,
      );
    if (args.spare !== undefined) return this.execSpare(args, args.spare, missing);
    let cwdFd: number | null = null;
    if (args.strictCwd) {
      try {
        cwdFd = openDirNoFollow(args.cwd);
      } catch {
        throw missing();
      }
    } else if (!(await stat(args.cwd).catch(() => null))?.isDirectory()) {
      throw missing();
    }
    const filter = this.channelFor(args);
    // after channelFor: the channel's directories exist for the confinement to grant
    const program = args.confine ? await this.confined(args, args.confine) : args.argv;
    const pipes = await this.takePipes();
    // the child changes into the opened directory itself (its fd survives the fork until exec)
    const script = wrapperScript(args, pipes?.[1]?.identity ?? null);
    const argv = ['/bin/sh', '-c', script, 'paddock-job', ...program];
    const [file, ...rest] = scopedArgv(this.scope, argv);
    const spawned = spawnWithPipes(pipes, () =>
      spawn(file, rest, {
        cwd: cwdFd === null ? args.cwd : `/proc/self/fd/${cwdFd}`,
        env: args.env,
        stdio: [
          'ignore',
          pipes?.[0]?.writeFd ?? 'pipe',
          pipes?.[1]?.writeFd ?? 'pipe',
          args.hold ? 'pipe' : 'ignore',
        ],
        detached: args.newSession,
        ...spawnIdentity(this.account),
      }),
    );
    try {
      return await this.track(args.stream, spawned.child, {
        hold: args.hold,
        newSession: args.newSession,
        filter,
        channelDir: args.toolChannel?.dir ?? null,
        outputs: spawned.outputs,
      });
    } finally {
      if (cwdFd !== null) closeSync(cwdFd);
    }
  }

  /** The argv that runs a job's program under its confinement (see confine.ts). */
  private async confined(args: CallArgs<'exec'>, confine: ConfineRequest): Promise<string[]> {
    if (!this.scope) {
      throw new GuestFailure(
        'UNSUPPORTED_CAPABILITY',
        'This computer cannot confine a program to its exec rule (the kernel refused Landlock, or the architecture has no launcher); use run_command, or a host with Landlock.',
      );
    }
    const tokens = await confineTokens(confine, {
      searchPath: args.env.PATH ?? '/usr/bin:/bin',
      ...(args.toolChannel ? { channelDir: args.toolChannel.dir } : {}),
    });
    return confinedArgv(this.scope, tokens, args.argv);
  }

  /** Two pipes for a job's stdout and stderr, or null (the job then gets sockets). */
  private takePipes(): Promise<StdioPipe[] | null> {
    return this.pipes ? this.pipes.take(2) : Promise.resolve(null);
  }

  /**
   * Starts a spare shell: the next job's process, spawned ahead and held, in its own session,
   * with the rlimits of jobs, no environment and no job yet. `exec` with `spare` hands it one.
   */
  async prepare(args: CallArgs<'prepare'>): Promise<{ pid: number }> {
    if (this.jobs.has(args.stream)) {
      throw new GuestFailure('INVALID_ARGUMENT', `Channel ${args.stream} is already in use.`);
    }
    const argv = scopedArgv(this.scope, spareArgv(args.rlimits, args.shell));
    // the spawner forks without blocking this loop (it always makes a new session); else spawn here
    const fromSpawner = args.newSession ? await this.spawner?.start(argv).catch(() => null) : null;
    const pipes = fromSpawner ? null : await this.takePipes();
    const { child, outputs } = fromSpawner
      ? { child: fromSpawner as JobChild, outputs: spawnerOutputs(fromSpawner) }
      : spawnWithPipes(pipes, () =>
          spawn(argv[0]!, argv.slice(1), {
            cwd: '/',
            env: {},
            stdio: ['ignore', pipes?.[0]?.writeFd ?? 'pipe', pipes?.[1]?.writeFd ?? 'pipe', 'pipe'],
            detached: args.newSession,
            ...spawnIdentity(this.account),
          }),
        );
    return this.track(args.stream, child, {
      hold: true,
      newSession: args.newSession,
      filter: null,
      channelDir: null,
      spare: args.shell ?? null,
      outputs,
    });
  }

  /** Hands a job to a spare shell: it reads the job from its hold pipe and becomes it. */
  private async execSpare(
    args: CallArgs<'exec'>,
    spareStream: number,
    missing: () => GuestFailure,
  ): Promise<{ pid: number }> {
    const job = this.jobs.get(spareStream);
    if (!job?.spare || job.exited || !job.hold || !job.child.pid) {
      throw new GuestFailure(
        'NOT_FOUND',
        `No spare shell on stream ${spareStream}; start the job without one.`,
      );
    }
    if (
      args.strictCwd ||
      args.confine ||
      !Object.keys(args.env).every((name) => EXPORTABLE_NAME.test(name))
    ) {
      throw new GuestFailure('INVALID_ARGUMENT', 'This job cannot use a spare shell; start it without one.');
    }
    if (!(await stat(args.cwd).catch(() => null))?.isDirectory()) throw missing();
    if (job.exited || this.jobs.has(args.stream)) {
      throw new GuestFailure('NOT_FOUND', `The spare shell on stream ${spareStream} is gone.`);
    }
    job.filter = this.channelFor(args);
    job.channelDir = args.toolChannel?.dir ?? null;
    this.jobs.delete(spareStream);
    this.groups.delete(spareStream);
    job.spare = false;
    job.stream = args.stream;
    this.jobs.set(args.stream, job);
    if (args.newSession) this.groups.set(args.stream, job.child.pid);
    job.hold.end(spareJob(args, job.spareShell, job.stderrName));
    job.hold = null;
    return { pid: job.child.pid };
  }

  /** The tool channel's directory and stderr scanner of a job (null without a channel). */
  private channelFor(args: CallArgs<'exec'>): ChannelScanner | null {
    return jobChannel(this.link, this.account, args);
  }

  /** Waits for a spawned job's process and follows its output and exit on `stream`. */
  private async track(
    stream: number,
    child: JobChild,
    how: {
      hold: boolean;
      newSession: boolean;
      filter: StreamFilter | null;
      channelDir: string | null;
      /** A spare shell: the jobs' shell it was started for (null: none, it is `sh`). */
      spare?: string | null;
      outputs: Outputs;
    },
  ): Promise<{ pid: number }> {
    const pid = await new Promise<number>((resolve, reject) => {
      if (child instanceof SpawnedProcess) return resolve(child.pid);
      const started = child as ChildProcess;
      started.once('spawn', () => resolve(started.pid!));
      started.once('error', (e) =>
        reject(
          new GuestFailure(
            'INTERNAL',
            `Could not start the job: ${e.message}. Check that /bin/sh exists in the profile.`,
          ),
        ),
      );
    });
    const job: RunningJob = {
      stream,
      spare: how.spare !== undefined,
      spareShell: how.spare ?? undefined,
      filter: how.filter,
      child,
      hold: how.hold ? (child.stdio[3] as NodeJS.WritableStream) : null,
      openStreams: 2,
      exited: null,
      reported: false,
      quietTimer: null,
      maxTimer: null,
      channelDir: how.channelDir,
      stderrName: how.outputs.stderrName,
    };
    job.hold?.on('error', () => undefined);
    this.jobs.set(stream, job);
    if (how.newSession) this.groups.set(stream, pid);
    this.streams.follow(job, how.outputs);
    return { pid };
  }

  /**
   * Writes a tool-channel reply into the client's FIFO. The FIFO must exist, be a FIFO (never
   * followed through a symlink) and have a reader; otherwise the reply is dropped.
   */
  channelReply(stream: number, id: string, body: string): { delivered: boolean } {
    const dir = this.jobs.get(stream)?.channelDir;
    if (!dir) return { delivered: false };
    const path = id.startsWith(SHELL_ID_PREFIX)
      ? `${dir}${SHELL_POOL_SUFFIX}/f-${id.slice(SHELL_ID_PREFIX.length)}`
      : join(dir, id);
    return writeReply(path, body);
  }

  /** Lets a held job exec its program. */
  release(stream: number): void {
    const job = this.require(stream);
    if (!job.hold) return;
    job.hold.end('go\n');
    job.hold = null;
  }

  /** Signals a job's root, or its whole process group. */
  signal(stream: number, signal: NodeJS.Signals, group: boolean): void {
    const job = this.jobs.get(stream);
    // A job's process group outlives its root (it is the family when there is no cgroup).
    const pid = job?.child.pid ?? this.groups.get(stream);
    if (!pid) throw new GuestFailure('NOT_FOUND', `No job on stream ${stream}.`);
    if (!group && (!job || job.exited)) return;
    try {
      process.kill(group ? -pid : pid, signal);
    } catch {
      // Already gone: nothing to signal.
    }
  }

  /** Kills every job (the agent is shutting down). */
  killAll(): void {
    for (const job of this.jobs.values()) {
      if (!job.exited) job.child.kill('SIGKILL');
    }
    this.spawner?.close();
  }

  private require(stream: number): RunningJob {
    const job = this.jobs.get(stream);
    if (!job) throw new GuestFailure('NOT_FOUND', `No job on stream ${stream}.`);
    return job;
  }
}
