/**
 * Real pipes for the stdout and stderr of jobs.
 *
 * Node gives a child `stdio: 'pipe'` as a UNIX socket pair, and Linux refuses to open a socket
 * through `/proc/self/fd/N` (ENXIO, "No such device or address"): `> /dev/stderr`,
 * `tee /dev/stdout` and `cat /dev/fd/1` all fail in a job whose output is a socket. A pipe can be
 * reopened that way, but Node has no call that makes one, so the agent keeps a pool of FIFOs made
 * ahead in batches by one `mkfifo` (one fork for many jobs). Taking a pipe opens the FIFO's read
 * end (non-blocking, for the agent's loop) and then its write end (blocking, for the job), and
 * unlinks it at once: what remains is a pipe only the two descriptors reach. Each FIFO belongs to
 * the jobs' account, because reopening through `/proc` checks the inode's owner.
 *
 * Where `mkfifo` is missing or fails, `take` answers null and the caller falls back to sockets.
 */
import { type ChildProcess, execFile } from 'node:child_process';
import {
  chownSync,
  closeSync,
  constants,
  existsSync,
  mkdirSync,
  openSync,
  rmSync,
  unlinkSync,
} from 'node:fs';
import { Socket } from 'node:net';
import { dirname, join } from 'node:path';
import { type JobAccount, TOOL_CHANNEL_ROOT } from './account.js';

/**
 * Where the pool's FIFOs wait: the agent's own directory (0700) in its tool-channel root, which
 * jobs may pass through but not list; no job's channel is named like it (theirs are numbers).
 */
export const STDIO_FIFO_DIR = `${TOOL_CHANNEL_ROOT}/stdio`;
/** FIFOs one `mkfifo` makes. */
const BATCH = 96;
/** A refill starts when fewer than this many FIFOs wait. */
const LOW_WATER = 70;
/** How long a `mkfifo` may take before the pool gives up on it. */
const MKFIFO_TIMEOUT_MS = 5000;

/** One pipe: the agent reads `reader`; the job gets `writeFd` (the agent closes it after the spawn). */
export interface StdioPipe {
  readonly reader: Socket;
  readonly writeFd: number;
  /** What `readlink /proc/self/fd/N` shows for the job's end. */
  readonly identity: string;
}

/** A pool of FIFOs that become the jobs' stdout and stderr pipes. */
export class StdioPipes {
  private readonly ready: string[] = [];
  private refilling: Promise<void> | null = null;
  private next = 0;
  private failed = false;

  constructor(
    private readonly account: JobAccount | null,
    private readonly dir: string = STDIO_FIFO_DIR,
    /**
     * On an image, `mkfifo` is the image's — a program root inside may have replaced — so it runs
     * through the job launcher (which drops the agent's capabilities and puts it in a Landlock
     * domain of its own, where it cannot trace the agent), never as the agent itself.
     */
    private readonly launcher: string | null = null,
  ) {
    try {
      mkdirSync(dirname(this.dir), { recursive: true, mode: 0o711 });
      rmSync(this.dir, { recursive: true, force: true });
      mkdirSync(this.dir, { mode: 0o700 });
    } catch {
      this.failed = true;
    }
    void this.refill();
  }

  /** `count` pipes, or null when the pool cannot make them (use sockets then). */
  async take(count: number): Promise<StdioPipe[] | null> {
    while (!this.failed && this.ready.length < count) await this.refill();
    if (this.failed) return null;
    const paths = this.ready.splice(0, count);
    if (this.ready.length < LOW_WATER) void this.refill();
    const pipes: StdioPipe[] = [];
    try {
      for (const path of paths) pipes.push(this.open(path));
    } catch {
      for (const p of pipes) StdioPipes.release(p);
      return null;
    } finally {
      for (const path of paths) {
        try {
          unlinkSync(path);
        } catch {
          // already gone
        }
      }
    }
    return pipes;
  }

  /** Closes a pipe that was never handed to a job. */
  static release(pipe: StdioPipe): void {
    pipe.reader.destroy();
    closeWriteEnd(pipe);
  }

  private open(path: string): StdioPipe {
    const readFd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK);
    let writeFd: number;
    try {
      writeFd = openSync(path, constants.O_WRONLY);
    } catch (e) {
      closeSync(readFd);
      throw e;
    }
    const reader = new Socket({ fd: readFd, readable: true, writable: false });
    return { reader, writeFd, identity: `${path} (deleted)` };
  }

  private refill(): Promise<void> {
    if (this.refilling) return this.refilling;
    const names = Array.from({ length: BATCH }, () => join(this.dir, `f${this.next++}`));
    this.refilling = new Promise<void>((resolve) => {
      const mkfifo = ['-m', '600', '--', ...names];
      const [program, args] = this.launcher
        ? [
            this.launcher,
            [['/usr/bin/mkfifo', '/bin/mkfifo'].find((p) => existsSync(p)) ?? '/usr/bin/mkfifo', ...mkfifo],
          ]
        : ['mkfifo', mkfifo];
      execFile(program, args, { timeout: MKFIFO_TIMEOUT_MS, env: { PATH: '/usr/bin:/bin' } }, (error) => {
        try {
          if (error) throw error;
          if (this.account) for (const n of names) chownSync(n, this.account.uid, this.account.gid);
          this.ready.push(...names);
        } catch {
          this.failed = true;
        }
        this.refilling = null;
        resolve();
      });
    });
    return this.refilling;
  }
}

/** Closes the agent's copy of a pipe's write end (the job keeps its own). */
export function closeWriteEnd(pipe: StdioPipe): void {
  try {
    closeSync(pipe.writeFd);
  } catch {
    // already closed
  }
}

/** Where a job's output is read: the child's own streams, or the read ends of its pipes. */
export interface Outputs {
  stdout: NodeJS.ReadableStream;
  stderr: NodeJS.ReadableStream;
  /** What `readlink /proc/self/fd/2` shows in the job, when known. */
  stderrName: string | null;
}

/**
 * Spawns a child whose stdout and stderr are `pipes` (when given): the agent's copies of the
 * write ends close once the child has them, so the read ends see the end of the job's output.
 */
export function spawnWithPipes(
  pipes: StdioPipe[] | null,
  start: () => ChildProcess,
): { child: ChildProcess; outputs: Outputs } {
  let child: ChildProcess;
  try {
    child = start();
  } finally {
    for (const p of pipes ?? []) closeWriteEnd(p);
  }
  const [out, err] = pipes ?? [];
  if (out && err) {
    child.once('error', () => {
      out.reader.destroy();
      err.reader.destroy();
    });
    return { child, outputs: { stdout: out.reader, stderr: err.reader, stderrName: err.identity } };
  }
  return { child, outputs: { stdout: child.stdout!, stderr: child.stderr!, stderrName: null } };
}

/** The outputs of a spare the spawner started (its streams and the name its stderr has). */
export function spawnerOutputs(spare: Omit<Outputs, 'stderrName'> & { stderrName: string | null }): Outputs {
  return { stdout: spare.stdout, stderr: spare.stderr, stderrName: spare.stderrName };
}
