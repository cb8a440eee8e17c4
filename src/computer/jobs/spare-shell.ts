/**
 * The spare shells of a generation: the next jobs' processes, started in the guest ahead of time
 * and already placed in process families of their own, waiting for their jobs. A job that takes
 * one skips the spawn, the family placement and the release round trip. Two are kept: the one a
 * job takes was started a whole job earlier, so its shell has finished loading (a spare started
 * right after the previous job could still be loading when the next job arrives back to back).
 * The guest forks them through its spawner, which does not block the agent. A spare that dies,
 * or that a job cannot use, is dropped and the job starts the ordinary way.
 */
import type { CallArgs } from '../../guest/protocol.js';
import { PaddockError } from '../../shared/errors.js';
import type { JobFamily } from '../backend/types.js';
import type { JobGuest } from './job-guest.js';

/** Streams of spare shells: above every job number, below the terminals' range. */
export const SPARE_STREAM_BASE = 0x3000_0000;

/** Scripts up to this many bytes run in the spare shell (an `sh` spare reads its job byte by byte). */
const SPARE_SCRIPT_MAX_BYTES = 8192;
/** Spares kept ready: the one a job takes was started a whole job earlier (its shell has loaded). */
export const SPARES_AHEAD = 2;

/** Whether a script job can run in the spare shell (small, and no NUL: it ends the job's set-up). */
export function spareCanRun(script: string): boolean {
  return Buffer.byteLength(script) <= SPARE_SCRIPT_MAX_BYTES && !script.includes('\0');
}

export interface Spare {
  stream: number;
  pid: number;
  /** Its cgroup family (null where families are sessions). */
  family: JobFamily | null;
}

export class SpareShell {
  /** Spares ready or on their way, oldest first. */
  private pending: { stream: number; ready: Promise<Spare | null> }[] = [];
  private count = 0;
  private closed = false;

  constructor(private readonly guest: () => JobGuest) {}

  /**
   * Starts a job's process in a family of its own: in the spare shell when `useSpare` and one
   * is there, else spawned, placed in its family (cgroup) and released.
   */
  async startJob(
    args: CallArgs<'exec'>,
    useSpare: boolean,
  ): Promise<{ pid: number; family: JobFamily | null }> {
    const { client, instance, hello } = this.guest();
    const spare = useSpare ? await this.take() : null;
    if (spare) {
      try {
        const { pid } = await client.call('exec', { ...args, spare: spare.stream });
        return { pid, family: spare.family };
      } catch (e) {
        await this.discard(spare);
        // a missing cwd stays the job's error; anything else starts it the ordinary way
        if (e instanceof PaddockError && e.code === 'NOT_FOUND' && e.message.includes(args.cwd)) throw e;
      }
    }
    const { pid } = await client.call('exec', args);
    let family: JobFamily | null = null;
    if (instance.familyMechanism === 'cgroup') {
      try {
        family = await instance.adoptJob(`job${args.stream}`, pid, hello.pid);
      } catch (e) {
        await client
          .call('signal', { stream: args.stream, signal: 'SIGKILL', group: false })
          .catch(() => undefined);
        throw e;
      }
    }
    if (args.hold) await client.call('release', { stream: args.stream });
    return { pid, family };
  }

  /** Takes the spare (waiting for one on its way), or null when there is none. */
  private async take(): Promise<Spare | null> {
    return this.pending.shift()?.ready ?? null;
  }

  /**
   * Starts spares until SPARES_AHEAD are ready or on their way. Call it when no job is running
   * that should finish fast: the cgroup placement blocks the host's event loop for about a
   * millisecond (and where the guest has no spawner, its spawn blocks the agent's for several),
   * which delays the exit report of a job running meanwhile.
   */
  prepare(): void {
    while (this.pending.length < SPARES_AHEAD && !this.closed) {
      const k = this.count++;
      const stream = SPARE_STREAM_BASE + k;
      this.pending.push({ stream, ready: this.start(stream, k).catch(() => null) });
    }
  }

  /** A stream's process exited: true when it was a spare's (which is then forgotten). */
  onExit(stream: number): boolean {
    if (stream < SPARE_STREAM_BASE || stream >= SPARE_STREAM_BASE + this.count) return false;
    const i = this.pending.findIndex((p) => p.stream === stream);
    if (i >= 0) {
      const [gone] = this.pending.splice(i, 1);
      void gone?.ready.then((spare) => spare?.family?.dispose());
    }
    return true;
  }

  /** Kills a spare no job could use. */
  async discard(spare: Spare): Promise<void> {
    if (spare.family) {
      await spare.family.kill().catch(() => undefined);
      await spare.family.dispose().catch(() => undefined);
      return;
    }
    await this.guest()
      .client.call('signal', { stream: spare.stream, signal: 'SIGKILL', group: true })
      .catch(() => undefined);
  }

  /** The generation ended: no more spares (the sandbox takes the last one with it). */
  close(): void {
    this.closed = true;
    this.pending = [];
  }

  private async start(stream: number, k: number): Promise<Spare | null> {
    const { client, instance, hello } = this.guest();
    const { pid } = await client.call('prepare', {
      stream,
      rlimits: instance.jobRlimits,
      newSession: true,
      ...(hello.shell ? { shell: hello.shell } : {}),
    });
    if (instance.familyMechanism !== 'cgroup') return { stream, pid, family: null };
    try {
      const family = await instance.adoptJob(`spare${k}`, pid, hello.pid);
      return { stream, pid, family };
    } catch {
      await client.call('signal', { stream, signal: 'SIGKILL', group: false }).catch(() => undefined);
      return null;
    }
  }
}
