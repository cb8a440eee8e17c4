/**
 * Spare shells started through `paddock-spawner` (the host binds it; see the host's
 * spawner-program.ts) instead of by the agent's own fork, which blocks the agent's event loop for
 * milliseconds on a large Node process. One spawner serves SETS spares: it is started with that
 * many sets of stdout/stderr/hold sockets, and a new one replaces it when they are used up, when
 * the spare's argv changes, or when it stops answering.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { EventEmitter } from 'node:events';
import { constants } from 'node:os';
import type { Readable, Writable } from 'node:stream';
import type { JobAccount } from './account.js';
import { closeWriteEnd, type StdioPipe, StdioPipes } from './stdio-pipes.js';

/** Spares one spawner starts before it is replaced (three sockets each, on both sides). */
const SETS = 32;
/** The longest a spare may take to be reported started before the agent spawns it itself. */
const START_TIMEOUT_MS = 2000;
const REQUEST_BYTES = 12;
const REPORT_BYTES = 16;
const REPORT = { started: 1, exited: 2, failed: 3 } as const;
const KEEP_ACCOUNT = 0xffff_ffff;

const SIGNAL_NAMES = new Map<number, NodeJS.Signals>(
  Object.entries(constants.signals).map(([name, n]) => [n, name as NodeJS.Signals]),
);

/** The parts of a ChildProcess the job runner uses; a spare from the spawner has them too. */
export interface JobChild {
  readonly pid?: number | undefined;
  readonly stdout: Readable | null;
  readonly stderr: Readable | null;
  readonly stdio: readonly unknown[];
  kill(signal?: NodeJS.Signals): boolean;
  on(event: 'exit', listener: (code: number | null, signal: NodeJS.Signals | null) => void): this;
  once(event: 'close', listener: () => void): this;
}

/** A spare started by the spawner: its exit comes from the spawner's report. */
export class SpawnedProcess extends EventEmitter implements JobChild {
  readonly stdio: readonly [null, Readable, Readable, Writable];
  private exited = false;
  private openStreams = 2;

  constructor(
    readonly pid: number,
    readonly stdout: Readable,
    readonly stderr: Readable,
    hold: Writable,
    /** What `readlink /proc/self/fd/2` shows in the spare, when known (its stderr is a pipe). */
    readonly stderrName: string | null = null,
  ) {
    super();
    this.stdio = [null, stdout, stderr, hold];
    for (const s of [stdout, stderr]) {
      s.once('close', () => {
        this.openStreams -= 1;
        this.closeIfDone();
      });
    }
  }

  kill(signal: NodeJS.Signals = 'SIGTERM'): boolean {
    if (this.exited) return false;
    try {
      process.kill(this.pid, signal);
      return true;
    } catch {
      return false;
    }
  }

  /** The spawner reported the wait status. */
  settle(status: number): void {
    if (this.exited) return;
    this.exited = true;
    const signal = status & 0x7f;
    if (signal === 0) this.emit('exit', (status >> 8) & 0xff, null);
    else this.emit('exit', null, SIGNAL_NAMES.get(signal) ?? null);
    (this.stdio[3] as Writable).destroy();
    this.closeIfDone();
  }

  private closeIfDone(): void {
    if (this.exited && this.openStreams === 0) this.emit('close');
  }
}

interface Waiting {
  resolve(p: SpawnedProcess): void;
  reject(e: Error): void;
  timer: NodeJS.Timeout;
}

/** One spawner process and the sets it was started with. */
class SpawnerProcess {
  readonly child: ChildProcess;
  private used = 0;
  private readonly waiting = new Map<number, Waiting>();
  private readonly spares = new Map<number, SpawnedProcess>();
  /** Sets whose start was given up on: their spare is killed when it shows. */
  private readonly abandoned = new Set<number>();
  private pending: Buffer = Buffer.alloc(0);
  alive = true;

  /**
   * `pipes` (2 per set, when given) become the spares' stdout and stderr instead of sockets; the
   * spawner holds their write ends, the agent their read ends.
   */
  constructor(
    program: string,
    readonly argv: string[],
    private readonly pipes: StdioPipe[] | null = null,
  ) {
    const sets: Array<'pipe' | number> = [];
    for (let set = 0; set < SETS; set++) {
      sets.push(pipes?.[2 * set]?.writeFd ?? 'pipe', pipes?.[2 * set + 1]?.writeFd ?? 'pipe', 'pipe');
    }
    try {
      this.child = spawn(program, argv, { cwd: '/', env: {}, stdio: ['pipe', 'pipe', 'ignore', ...sets] });
    } finally {
      for (const p of pipes ?? []) closeWriteEnd(p);
    }
    this.child.stdin!.on('error', () => undefined);
    this.child.on('error', () => this.retire());
    this.child.on('exit', () => this.retire());
    this.child.stdout!.on('data', (chunk: Buffer) => this.onReports(chunk));
  }

  get full(): boolean {
    return this.used >= SETS;
  }

  start(account: JobAccount | null): Promise<SpawnedProcess> {
    const set = this.used++;
    const request = Buffer.alloc(REQUEST_BYTES);
    request.writeUInt32LE(set, 0);
    request.writeUInt32LE(account?.uid ?? KEEP_ACCOUNT, 4);
    request.writeUInt32LE(account?.gid ?? KEEP_ACCOUNT, 8);
    return new Promise<SpawnedProcess>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiting.delete(set);
        this.abandoned.add(set);
        this.retire();
        reject(new Error('the spawner did not start the spare in time'));
      }, START_TIMEOUT_MS);
      this.waiting.set(set, { resolve, reject, timer });
      this.child.stdin!.write(request);
    });
  }

  /** No more requests: the spawner exits; its waiters still report the spares they started. */
  retire(): void {
    if (!this.alive) return;
    this.alive = false;
    this.child.stdin!.end();
    for (let set = this.used; set < SETS; set++) this.destroySet(set);
    for (const [set, w] of this.waiting) {
      clearTimeout(w.timer);
      this.abandoned.add(set);
      w.reject(new Error('the spawner ended'));
    }
    this.waiting.clear();
  }

  private sockets(set: number): [Readable, Readable, Writable] {
    const s = this.child.stdio;
    const out = this.pipes?.[2 * set]?.reader ?? (s[3 + 3 * set] as Readable);
    const err = this.pipes?.[2 * set + 1]?.reader ?? (s[4 + 3 * set] as Readable);
    return [out, err, s[5 + 3 * set] as Writable];
  }

  private destroySet(set: number): void {
    for (const s of this.sockets(set)) s.destroy();
  }

  private onReports(chunk: Buffer): void {
    this.pending = this.pending.length ? Buffer.concat([this.pending, chunk]) : chunk;
    let at = 0;
    for (; at + REPORT_BYTES <= this.pending.length; at += REPORT_BYTES) {
      const kind = this.pending.readUInt32LE(at);
      const set = this.pending.readUInt32LE(at + 4);
      const value = this.pending.readInt32LE(at + 8);
      const status = this.pending.readUInt32LE(at + 12);
      if (set >= this.used) continue;
      if (kind === REPORT.started) this.onStarted(set, value);
      else if (kind === REPORT.exited) this.onExited(set, status);
      else if (kind === REPORT.failed) this.onFailed(set, value);
    }
    this.pending = this.pending.subarray(at);
  }

  private onStarted(set: number, pid: number): void {
    const w = this.waiting.get(set);
    if (!w) {
      if (this.abandoned.has(set)) {
        try {
          process.kill(pid, 'SIGKILL');
        } catch {
          // already gone
        }
      }
      this.destroySet(set);
      return;
    }
    clearTimeout(w.timer);
    this.waiting.delete(set);
    const [out, err, hold] = this.sockets(set);
    const spare = new SpawnedProcess(pid, out, err, hold, this.pipes?.[2 * set + 1]?.identity ?? null);
    this.spares.set(set, spare);
    w.resolve(spare);
  }

  private onExited(set: number, status: number): void {
    const spare = this.spares.get(set);
    this.spares.delete(set);
    spare?.settle(status);
  }

  private onFailed(set: number, errno: number): void {
    const w = this.waiting.get(set);
    this.destroySet(set);
    if (!w) return;
    clearTimeout(w.timer);
    this.waiting.delete(set);
    w.reject(new Error(`the spawner could not fork (errno ${-errno})`));
  }
}

/** The spawner named by `--spawner PATH`, or null (the agent then spawns spares itself). */
export function spawnerFrom(
  argv: string[],
  account: JobAccount | null,
  pipes: StdioPipes | null = null,
): Spawner | null {
  const i = argv.indexOf('--spawner');
  const path = i >= 0 ? argv[i + 1] : undefined;
  return path?.startsWith('/') ? new Spawner(path, account, pipes) : null;
}

/** Starts spare shells through paddock-spawner. */
export class Spawner {
  private current: SpawnerProcess | null = null;

  constructor(
    private readonly program: string,
    private readonly account: JobAccount | null,
    private readonly pipes: StdioPipes | null = null,
  ) {}

  /** Starts `argv` as a spare; rejects when the spawner cannot (the caller then spawns it). */
  async start(argv: string[]): Promise<SpawnedProcess> {
    if (!this.usable(argv)) {
      const pipes = this.pipes ? await this.pipes.take(2 * SETS) : null;
      // another start may have made a spawner while this one waited for pipes
      if (this.usable(argv)) {
        for (const p of pipes ?? []) StdioPipes.release(p);
      } else {
        this.current?.retire();
        this.current = new SpawnerProcess(this.program, argv, pipes);
      }
    }
    return this.current!.start(this.account);
  }

  private usable(argv: string[]): boolean {
    const c = this.current;
    return !!c?.alive && !c.full && c.argv.join('\0') === argv.join('\0');
  }

  /** The agent is shutting down. */
  close(): void {
    this.current?.retire();
    this.current = null;
  }
}
