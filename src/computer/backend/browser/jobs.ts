/**
 * The jobs of a browser computer. The guest starts each job with its stdout and stderr on pipes
 * and pushes what it reads from them (`@d`), the end of each (`@e`) and the exit status (`@x`) as
 * events on the agent's port; this turns them into the data, end and exit frames of the guest
 * protocol. An event comes from the page, so its fields are checked before anything is relayed.
 */
import { FrameKind } from '../../../guest/frames.js';
import type { CallArgs, GuestMessage } from '../../../guest/protocol.js';
import type { AgentEvent, AgentLine } from './agent-line.js';
import { eventBytes, field } from './agent-line.js';

/**
 * How long a job's exit waits for the ends of its stdout and stderr. A child that keeps them open
 * (a server started in the background) would hold the exit forever; output after this is dropped.
 */
const EXIT_STREAM_WAIT_MS = 3000;
/** Longest job script sent on the request line; a longer one goes to a file first. */
const MAX_INLINE_SCRIPT = 1800;
const SIGNALS: Record<number, string> = { 1: 'SIGHUP', 2: 'SIGINT', 9: 'SIGKILL', 15: 'SIGTERM' };

interface RunningJob {
  stream: number;
  /** The fds (1, 2) whose end the guest announced. */
  ended: Set<number>;
  /** The exit status once the root exited. */
  status: number | null;
  timer: NodeJS.Timeout | null;
}

/** One POSIX-shell word. */
export function shellQuote(word: string): string {
  return `'${word.replaceAll("'", `'\\''`)}'`;
}

/** The exit of a job from the status its shell reported: 128+n is signal n where we know n. */
export function exitOf(status: number): { exitCode: number | null; signal: string | null } {
  const signal = status > 128 ? SIGNALS[status - 128] : undefined;
  return signal ? { exitCode: null, signal } : { exitCode: status, signal: null };
}

/** What the jobs use of their browser guest. */
export interface JobIo {
  agent: AgentLine;
  send(kind: (typeof FrameKind)[keyof typeof FrameKind], stream: number, fd: number, payload: Buffer): void;
  message(m: GuestMessage): void;
  writeFile(path: string, data: Buffer, overwrite: boolean): Promise<unknown>;
}

/** The running jobs of one browser computer. */
export class BrowserJobs {
  private readonly jobs = new Map<number, RunningJob>();

  constructor(private readonly io: JobIo) {}

  /** Whether the job on `stream` still runs here. */
  has(stream: number): boolean {
    return this.jobs.has(stream);
  }

  /** Forgets every job (the VM is gone). */
  clear(): void {
    for (const job of this.jobs.values()) if (job.timer) clearTimeout(job.timer);
    this.jobs.clear();
  }

  /** Starts a job; its output and exit arrive later as events. */
  async exec(a: CallArgs<'exec'>): Promise<{ pid: number }> {
    const exports = Object.entries(a.env)
      .filter(([k]) => /^[A-Za-z_][A-Za-z0-9_]*$/.test(k))
      .map(([k, v]) => `export ${k}=${shellQuote(v)}\n`)
      .join('');
    const cwd = shellQuote(a.cwd);
    let script =
      `cd ${cwd} 2>/dev/null || { echo "cannot enter "${cwd} >&2; exit 126; }\n` +
      `${exports}exec ${a.argv.map(shellQuote).join(' ')}\n`;
    if (Buffer.byteLength(script) > MAX_INLINE_SCRIPT) {
      // too long for one request line: the script goes to a file first
      const file = `/run/j/.s${a.stream}`;
      await this.io.writeFile(file, Buffer.from(script), true);
      script = `. ${file}\n`;
    }
    const job: RunningJob = { stream: a.stream, ended: new Set(), status: null, timer: null };
    this.jobs.set(a.stream, job);
    try {
      const [pid] = await this.io.agent.request('run', [`s${a.stream}`, field(script)]);
      return { pid: Math.max(1, Number(pid) || 1) };
    } catch (e) {
      this.jobs.delete(a.stream);
      throw e;
    }
  }

  /** An event a job pushed; returns why it is malformed, or null. */
  onEvent(event: AgentEvent): string | null {
    const [name, second, data, ...rest] = event.fields;
    const stream = /^s\d{1,9}$/.test(name ?? '') ? Number(name?.slice(1)) : null;
    if (stream === null) return `"${String(name).slice(0, 20)}" names no job`;
    const job = this.jobs.get(stream);
    if (event.kind === 'x') {
      const status = Number(second);
      if (!/^\d{1,3}$/.test(second ?? '') || status > 255 || data !== undefined)
        return `exit status "${String(second).slice(0, 20)}" is not a number from 0 to 255`;
      if (job && job.status === null) {
        job.status = status;
        if (job.ended.size === 2) this.finish(job);
        else job.timer = setTimeout(() => this.finish(job), EXIT_STREAM_WAIT_MS);
      }
      return null;
    }
    if (second !== '1' && second !== '2') return `fd "${String(second).slice(0, 20)}" is neither 1 nor 2`;
    const fd = Number(second);
    if (event.kind === 'e') {
      if (data !== undefined) return 'an end carries no data';
      if (job && !job.ended.has(fd)) {
        job.ended.add(fd);
        if (job.ended.size === 2 && job.status !== null) this.finish(job);
      }
      return null;
    }
    const bytes = eventBytes(data, rest);
    if (typeof bytes === 'string') return bytes;
    // output of a job already reported (or never started here) is dropped, as after any exit
    if (job && !job.ended.has(fd)) this.io.send(FrameKind.Data, stream, fd, bytes);
    return null;
  }

  /** Reports a job's end: the ends of its streams, then its exit. */
  private finish(job: RunningJob): void {
    if (this.jobs.get(job.stream) !== job || job.status === null) return;
    if (job.timer) clearTimeout(job.timer);
    this.jobs.delete(job.stream);
    this.io.send(FrameKind.End, job.stream, 1, Buffer.alloc(0));
    this.io.send(FrameKind.End, job.stream, 2, Buffer.alloc(0));
    this.io.message({ t: 'exit', stream: job.stream, ...exitOf(job.status) });
    this.io.agent.request('forget', [`s${job.stream}`]).catch(() => undefined);
  }
}
