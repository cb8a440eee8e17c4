/**
 * PTYs inside the guest: interactive terminals running the login shell, shared by the agent
 * and the person in the dock. Output streams to the host as data frames (stream 1) with the
 * link's backpressure: a congested link pauses the PTY, so the kernel blocks the writing
 * program instead of the agent buffering a flood. Input arrives as `pty.write` calls, so the
 * host learns that its bytes were handed to the PTY.
 *
 * node-pty (a native addon, bound read-only under /opt/paddock/node_modules) is loaded on the
 * first terminal, so an agent that never opens one starts as fast as before.
 */
import { createRequire } from 'node:module';
import { constants } from 'node:os';
import { type JobAccount, scopedArgv, spawnIdentity } from './account.js';
import { GuestFailure } from './failure.js';
import { Fd } from './frames.js';
import type { GuestLink } from './link.js';
import type { CallArgs } from './protocol.js';

/** Input written to a PTY that its program has not read yet; beyond it writes are refused. */
export const MAX_PENDING_INPUT_BYTES = 1024 * 1024;
/** After SIGHUP, how long a terminal's process group gets before SIGKILL. */
const HANGUP_GRACE_MS = 500;

/** The part of node-pty's IPty the agent uses (data is a Buffer with `encoding: null`). */
interface PtyProcess {
  readonly pid: number;
  onData(listener: (data: Buffer | string) => void): unknown;
  onExit(listener: (e: { exitCode: number; signal?: number }) => void): unknown;
  write(data: Buffer | string): void;
  resize(cols: number, rows: number): void;
  pause(): void;
  resume(): void;
  kill(signal?: string): void;
}

interface PtyModule {
  spawn(
    file: string,
    args: string[],
    options: {
      name: string;
      cols: number;
      rows: number;
      cwd: string;
      env: Record<string, string>;
      encoding: null;
      uid?: number;
      gid?: number;
    },
  ): PtyProcess;
}

interface OpenPty {
  proc: PtyProcess;
  /** Paused because the link to the host is congested. */
  paused: boolean;
  exited: boolean;
}

const SIGNAL_NAMES = new Map<number, string>(
  Object.entries(constants.signals).map(([name, n]) => [n as number, name]),
);

/** The PTYs of this agent, by channel. */
export class PtyHost {
  private readonly ptys = new Map<number, OpenPty>();
  private module: PtyModule | null = null;

  constructor(
    private readonly link: GuestLink,
    private readonly account: JobAccount | null = null,
    private readonly scope: string | null = null,
  ) {}

  /** Spawns `argv` on a new PTY; resolves with its pid. */
  open(args: CallArgs<'pty.open'>): { pid: number } {
    if (this.ptys.has(args.stream)) {
      throw new GuestFailure('INVALID_ARGUMENT', `Channel ${args.stream} is already in use; use a new one.`);
    }
    const pty = this.load();
    let proc: PtyProcess;
    try {
      const [file, ...rest] = scopedArgv(this.scope, args.argv);
      proc = pty.spawn(file, rest, {
        name: args.env.TERM ?? 'xterm-256color',
        cols: args.cols,
        rows: args.rows,
        cwd: args.cwd,
        env: args.env,
        encoding: null,
        ...spawnIdentity(this.account),
      });
    } catch (e) {
      throw new GuestFailure(
        'INTERNAL',
        `Could not start a terminal: ${(e as Error).message}. Check that ${args.argv[0]} and ${args.cwd} exist in the computer.`,
      );
    }
    const entry: OpenPty = { proc, paused: false, exited: false };
    this.ptys.set(args.stream, entry);
    proc.onData((data) => {
      const bytes = typeof data === 'string' ? Buffer.from(data) : data;
      if (!this.link.sendData(args.stream, Fd.Stdout, bytes) && !entry.paused) {
        entry.paused = true;
        proc.pause();
        this.link.onDrain(() => {
          entry.paused = false;
          if (!entry.exited) proc.resume();
        });
      }
    });
    proc.onExit(({ exitCode, signal }) => {
      entry.exited = true;
      this.ptys.delete(args.stream);
      this.link.sendEnd(args.stream, Fd.Stdout);
      const name = signal ? (SIGNAL_NAMES.get(signal) ?? `SIG${signal}`) : null;
      this.link.send({
        t: 'pty.exit',
        stream: args.stream,
        exitCode: name ? null : exitCode,
        signal: name,
      });
    });
    return { pid: proc.pid };
  }

  /** Hands bytes to a PTY's input. */
  write(stream: number, data: Buffer): void {
    const entry = this.require(stream);
    const socket = (entry.proc as unknown as { _socket?: { writableLength?: number } })._socket;
    if ((socket?.writableLength ?? 0) + data.length > MAX_PENDING_INPUT_BYTES) {
      throw new GuestFailure(
        'LIMIT_EXCEEDED',
        'The program in this terminal is not reading its input and over 1 MiB is waiting; read the output, interrupt the program (ctrl_c) or wait before sending more.',
      );
    }
    if (data.length > 0) entry.proc.write(data);
  }

  /** Changes a PTY's window size. */
  resize(stream: number, cols: number, rows: number): void {
    this.require(stream).proc.resize(cols, rows);
  }

  /** Hangs up a PTY: SIGHUP to its process group, SIGKILL after a grace period. */
  close(stream: number): void {
    const entry = this.ptys.get(stream);
    if (!entry) return;
    const pid = entry.proc.pid;
    signalGroup(pid, 'SIGHUP');
    if (entry.paused) entry.proc.resume();
    setTimeout(() => {
      if (!entry.exited) signalGroup(pid, 'SIGKILL');
    }, HANGUP_GRACE_MS).unref();
  }

  /** Kills every PTY (the agent is shutting down). */
  killAll(): void {
    for (const entry of this.ptys.values()) signalGroup(entry.proc.pid, 'SIGKILL');
  }

  private require(stream: number): OpenPty {
    const entry = this.ptys.get(stream);
    if (!entry || entry.exited) {
      throw new GuestFailure(
        'NOT_FOUND',
        `No running terminal on stream ${stream}; its shell has exited. Create a new terminal.`,
      );
    }
    return entry;
  }

  private load(): PtyModule {
    if (this.module) return this.module;
    try {
      this.module = createRequire(import.meta.url)('@lydell/node-pty') as PtyModule;
    } catch (e) {
      throw new GuestFailure(
        'UNSUPPORTED_CAPABILITY',
        `Terminals are not available in this computer (node-pty did not load: ${(e as Error).message.split('\n')[0]}); use run_command instead.`,
      );
    }
    return this.module;
  }
}

function signalGroup(pid: number, signal: NodeJS.Signals): void {
  for (const target of [-pid, pid]) {
    try {
      process.kill(target, signal);
    } catch {
      // Already gone.
    }
  }
}
