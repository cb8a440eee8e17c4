/**
 * A job's output and exit as the host sees them: stdout and stderr sent as data frames on the
 * job's stream (stderr through the tool channel's filter), paused while the link is full, and
 * the root's exit reported once its output went quiet, or after a bounded wait when a descendant
 * keeps writing.
 */
import { Fd } from './frames.js';
import type { GuestLink } from './link.js';
import type { JobChild } from './spawner.js';
import type { Outputs } from './stdio-pipes.js';

/** After the root exits, how long output may stay quiet before the exit is reported. */
const EXIT_QUIET_MS = 15;
/** The longest the exit report waits for output still in flight (a descendant may keep writing). */
const EXIT_MAX_WAIT_MS = 200;

/** A filter applied to a stream's bytes before they leave the guest (the tool channel hooks stderr here). */
export type StreamFilter = { push(chunk: Buffer): Buffer; end(): Buffer };

/** A job the agent runs, as its output and exit are followed. */
export interface RunningJob {
  /** The stream its output and exit go to (a spare shell's changes when it becomes a job). */
  stream: number;
  /** A spare shell that has no job yet. */
  spare: boolean;
  /** The jobs' shell a spare was started for. */
  spareShell?: string;
  /** The tool channel's scanner of stderr, when the job has a channel. */
  filter: StreamFilter | null;
  child: JobChild;
  hold: NodeJS.WritableStream | null;
  openStreams: number;
  exited: { exitCode: number | null; signal: string | null } | null;
  reported: boolean;
  quietTimer: NodeJS.Timeout | null;
  maxTimer: NodeJS.Timeout | null;
  /** The tool channel's FIFO directory, when the job has a channel. */
  channelDir: string | null;
  /** What `readlink /proc/self/fd/2` shows in the job, when the agent knows it. */
  stderrName: string | null;
}

/** Follows the output and exit of jobs; `forget` drops a job whose exit and output both ended. */
export class JobStreams {
  constructor(
    private readonly link: GuestLink,
    private readonly forget: (job: RunningJob) => void,
  ) {}

  /** Sends the job's output as it comes and reports its root's exit after it. */
  follow(job: RunningJob, outputs: Outputs): void {
    this.pipe(job, Fd.Stdout, outputs.stdout);
    this.pipe(job, Fd.Stderr, outputs.stderr);
    job.child.on('exit', (code, signal) => {
      job.exited = { exitCode: code, signal };
      if (job.hold) job.hold.end();
      if (job.openStreams === 0) {
        this.reportExit(job);
        return;
      }
      // after the I/O poll that follows the timer: output already written is read first
      job.maxTimer = setTimeout(() => setImmediate(() => this.reportExit(job)), EXIT_MAX_WAIT_MS);
      this.armQuiet(job);
    });
  }

  private pipe(job: RunningJob, fd: number, source: NodeJS.ReadableStream): void {
    // only stderr carries the tool channel
    const filterOf = () => (fd === Fd.Stderr ? job.filter : null);
    source.on('data', (chunk: Buffer) => {
      const filter = filterOf();
      const bytes = filter ? filter.push(chunk) : chunk;
      if (bytes.length > 0 && !this.link.sendData(job.stream, fd, bytes)) {
        source.pause();
        this.link.onDrain(() => source.resume());
      }
      if (job.exited) this.armQuiet(job);
    });
    source.on('end', () => {
      const rest = filterOf()?.end();
      if (rest && rest.length > 0) this.link.sendData(job.stream, fd, rest);
      this.link.sendEnd(job.stream, fd);
      job.openStreams -= 1;
      if (job.openStreams > 0) return;
      if (job.reported) this.forget(job);
      else if (job.exited) this.reportExit(job);
    });
    source.on('error', () => undefined);
  }

  private armQuiet(job: RunningJob): void {
    if (job.quietTimer) clearTimeout(job.quietTimer);
    const timer = setTimeout(() => {
      // A stalled machine may fire the timer before the loop read output that was already
      // written: the report waits for the I/O poll of this turn (check phase), and new output
      // read there re-arms the timer instead.
      setImmediate(() => {
        if (job.quietTimer === timer) this.reportExit(job);
      });
    }, EXIT_QUIET_MS);
    job.quietTimer = timer;
  }

  private reportExit(job: RunningJob): void {
    if (job.reported || !job.exited) return;
    job.reported = true;
    if (job.quietTimer) clearTimeout(job.quietTimer);
    if (job.maxTimer) clearTimeout(job.maxTimer);
    const { stream } = job;
    this.link.send({ t: 'exit', stream, exitCode: job.exited.exitCode, signal: job.exited.signal });
    if (job.openStreams === 0) this.forget(job);
  }
}
