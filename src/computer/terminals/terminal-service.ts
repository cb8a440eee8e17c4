/**
 * The terminals of one computer: PTYs owned by the guest agent, shared by the agent's
 * tools and the person in the dock. Ids are generation-qualified (`g3.term2`); one terminal is
 * active (the one the dock shows). A relaunch ends every terminal of the old generation (their
 * processes die with its sandbox) and their ids answer STALE_GENERATION.
 *
 * The dock's TerminalSource wraps the service (list, write as the person, resize, activate,
 * subscribe, onChange, hold, journal); the tools add create, read and input by key.
 */

import type { Disposable } from '../../shared/disposable.js';
import { Emitter } from '../../shared/emitter.js';
import { PaddockError } from '../../shared/errors.js';
import type { Generation } from '../generation/generation.js';
import { parseId, terminalId } from '../ids.js';
import { baseJobEnv, GUEST_WORKSPACE } from '../link/guest-layout.js';
import {
  STREAM_RANGE,
  type StreamEvent,
  type StreamOwner,
  TERMINAL_STREAM_BASE,
} from '../link/stream-router.js';
import type { ComputerLog } from '../logs.js';
import { terminalShell } from '../shell-startup.js';
import { toAsciicast } from './asciicast.js';
import type { JournalEntry, TerminalInputBy, TerminalInputSource } from './journal.js';
import { Terminal, type TerminalChunk, type TerminalInfo, type TerminalRead } from './terminal.js';

export type { JournalEntry, TerminalChunk, TerminalInfo, TerminalInputBy, TerminalInputSource, TerminalRead };

/** How long a person's hold lasts without a keystroke or a renewal. */
export const TERMINAL_HOLD_MS = 10 * 60_000;

/** Terminals whose shell still runs, per generation. */
export const MAX_OPEN_TERMINALS = 16;
/** Terminals kept per generation, exited ones included (the oldest exited are forgotten first). */
const MAX_KEPT_TERMINALS = 32;
const DEFAULT_SIZE = { cols: 120, rows: 32 };

/** What the service needs from the ComputerManager. */
export interface TerminalHost {
  readonly computer: Generation | null;
  requireRunning(signal?: AbortSignal): Promise<Generation>;
  readonly log: ComputerLog;
  /** Whether `generation` was one of this computer's (its ids are stale, not another's). */
  launchedHere(generation: number): boolean;
}

export interface TerminalServiceOptions {
  /** Output kept per terminal (a profile's `limits.outputBytes` wins). */
  retentionBytes: number;
}

/** Terminals of one generation. */
interface GenerationTerminals {
  computer: Generation;
  terminals: Map<number, Terminal>;
  active: number | null;
  next: number;
}

export class TerminalService {
  private current: GenerationTerminals | null = null;
  /** A listener's failure is its own; the others still hear the change. */
  private readonly changes = new Emitter();

  constructor(
    private readonly host: TerminalHost,
    private readonly options: TerminalServiceOptions,
  ) {}

  /** Starts the login shell on a new PTY; activates it unless `activate` is false. */
  async create(options: { activate?: boolean; signal?: AbortSignal } = {}): Promise<TerminalInfo> {
    const c = await this.host.requireRunning(options.signal);
    const gen = this.generationOf(c);
    const open = [...gen.terminals.values()].filter((t) => !t.exited).length;
    if (open >= MAX_OPEN_TERMINALS) {
      throw new PaddockError(
        'LIMIT_EXCEEDED',
        `${MAX_OPEN_TERMINALS} terminals are already open; reuse one (list_terminals) or type "exit" in one you no longer need.`,
      );
    }
    const n = gen.next++;
    const id = terminalId(c.generation, n);
    const retention = c.profile.limits.outputBytes ?? this.options.retentionBytes;
    const t = new Terminal(id, c.generation, n, TERMINAL_STREAM_BASE + n, `Terminal ${n}`, retention, {
      ...DEFAULT_SIZE,
    });
    gen.terminals.set(n, t);
    const shell = terminalShell(c.hello?.shell ?? '/bin/sh');
    try {
      await c.call('pty.open', {
        stream: t.stream,
        argv: shell.argv,
        cwd: GUEST_WORKSPACE,
        env: {
          ...baseJobEnv(c.hello?.shell ?? '/bin/sh'),
          ...c.profile.env,
          TERM: 'xterm-256color',
          COLORTERM: 'truecolor',
          LANG: 'C.UTF-8',
          ...c.egressEnv(id),
          ...shell.env,
        },
        cols: t.cols,
        rows: t.rows,
      });
    } catch (e) {
      gen.terminals.delete(n);
      throw e;
    }
    t.ready = !t.exited;
    if (options.activate !== false) gen.active = n;
    this.prune(gen);
    this.host.log.add('info', 'terminal.create', `${id} started the login shell.`, {
      generation: c.generation,
    });
    this.changed();
    return this.info(gen, t);
  }

  /** Terminals of the current generation, with the active one marked. */
  list(): TerminalInfo[] {
    const gen = this.live();
    return gen ? [...gen.terminals.values()].map((t) => this.info(gen, t)) : [];
  }

  /** The active terminal of the current generation, if any. */
  active(): TerminalInfo | null {
    const gen = this.live();
    const t = gen?.active != null ? gen.terminals.get(gen.active) : undefined;
    return gen && t ? this.info(gen, t) : null;
  }

  /** Selects a terminal (the dock reveals it). */
  async activate(terminalId: string): Promise<void> {
    const { gen, terminal } = this.resolve(terminalId);
    if (gen.active === terminal.n) return;
    gen.active = terminal.n;
    this.changed();
  }

  /**
   * Hands bytes (keystrokes, a paste, the agent's input) to the PTY; resolves once delivered,
   * and the input is in the terminal's journal with who sent it. While a person holds the
   * terminal, input of any other source is refused (TERMINAL_HELD_BY_PERSON) and not typed.
   */
  async write(terminalId: string, data: string | Buffer, by: TerminalInputBy): Promise<void> {
    const { gen, terminal } = this.resolve(terminalId);
    const bytes = typeof data === 'string' ? Buffer.from(data, 'utf8') : data;
    this.requireLive(terminal);
    const hold = this.activeHold(terminal);
    if (hold && by.source !== 'person') {
      throw new PaddockError(
        'TERMINAL_HELD_BY_PERSON',
        `${hold.who} has taken control of ${terminal.id}, so your input was not typed. Wait until list_terminals shows heldBy: null for it (the hold ends when the person gives control back, or at ${new Date(hold.until).toISOString()} without typing), or work in another terminal (create_terminal).`,
        { terminalId: terminal.id, heldBy: hold.who, heldUntil: hold.until },
      );
    }
    if (hold) hold.until = Math.max(hold.until, Date.now() + TERMINAL_HOLD_MS);
    const offset = terminal.output.endOffset;
    await gen.computer.call('pty.write', { stream: terminal.stream }, { attachment: bytes });
    terminal.journal.input(by, bytes.toString('utf8'), offset);
  }

  /**
   * A person takes control of a terminal: until they give it back (or `holdMs` passes without
   * their typing), the agent's input is refused and list_terminals shows who holds it.
   */
  hold(terminalId: string, who: string, holdMs = TERMINAL_HOLD_MS): TerminalInfo {
    const { gen, terminal } = this.resolve(terminalId);
    this.requireLive(terminal);
    terminal.hold = { who, until: Date.now() + holdMs };
    terminal.journal.control('hold', who, terminal.output.endOffset);
    this.host.log.add('info', 'terminal.hold', `${who} took control of ${terminal.id}.`, {
      generation: terminal.generation,
    });
    const timer = setTimeout(() => this.activeHold(terminal), holdMs + 10);
    timer.unref();
    this.changed();
    return this.info(gen, terminal);
  }

  /** Gives control of a terminal back to everyone (nothing happens when nobody holds it). */
  release(terminalId: string, who: string): TerminalInfo {
    const { gen, terminal } = this.resolve(terminalId);
    if (terminal.hold) {
      terminal.hold = null;
      terminal.journal.control('release', who, terminal.output.endOffset);
      this.host.log.add('info', 'terminal.release', `${who} gave control of ${terminal.id} back.`, {
        generation: terminal.generation,
      });
      this.changed();
    }
    return this.info(gen, terminal);
  }

  /** Who typed what into a terminal (oldest first), of one source when given. */
  journal(
    terminalId: string,
    filter: { source?: TerminalInputSource; afterSeq?: number } = {},
  ): JournalEntry[] {
    return this.resolve(terminalId).terminal.journal.list(filter);
  }

  /** The terminal's kept session as an asciicast v2 file, inputs marked by who typed them. */
  asciicast(terminalId: string): string {
    return toAsciicast(this.resolve(terminalId).terminal);
  }

  /** The hold of `terminal` if it still runs; a lapsed one ends here (and is announced). */
  private activeHold(terminal: Terminal): { who: string; until: number } | null {
    const hold = terminal.hold;
    if (!hold) return null;
    if (hold.until > Date.now() && !terminal.exited) return hold;
    terminal.hold = null;
    terminal.journal.control('release', hold.who, terminal.output.endOffset);
    this.changed();
    return null;
  }

  /** Follows the dock's viewport (`who` is noted in the journal). */
  async resize(terminalId: string, cols: number, rows: number, who = 'dock'): Promise<void> {
    const { gen, terminal } = this.resolve(terminalId);
    if (
      !Number.isInteger(cols) ||
      !Number.isInteger(rows) ||
      cols < 2 ||
      cols > 1000 ||
      rows < 1 ||
      rows > 500
    ) {
      throw new PaddockError(
        'INVALID_ARGUMENT',
        'A terminal size is 2–1000 columns by 1–500 rows; pass whole numbers in range.',
      );
    }
    if (terminal.cols === cols && terminal.rows === rows) return;
    this.requireLive(terminal);
    await gen.computer.call('pty.resize', { stream: terminal.stream, cols, rows });
    terminal.cols = cols;
    terminal.rows = rows;
    terminal.journal.resize(who, cols, rows, terminal.output.endOffset);
  }

  /** read_terminal_output. */
  read(terminalId: string, cursor: string | undefined, byteLimit: number): TerminalRead {
    return this.resolve(terminalId).terminal.read(cursor, byteLimit);
  }

  /** Replays kept output after `fromCursor`, then live output until disposed (the dock). */
  subscribe(
    terminalId: string,
    fromCursor: string | undefined,
    onData: (chunk: TerminalChunk) => void,
  ): Disposable {
    return this.resolve(terminalId).terminal.subscribe(fromCursor, onData);
  }

  /** Fires when terminals appear, exit or go, become ready, or the active one changes. */
  onChange(listener: () => void): Disposable {
    return this.changes.on(listener);
  }

  /** The terminal behind an id: INVALID_ARGUMENT, STALE_GENERATION or NOT_FOUND otherwise. */
  resolve(terminalId: string): { gen: GenerationTerminals; terminal: Terminal } {
    const { generation, n } = parseId(terminalId, 'term');
    const c = this.host.computer;
    if (c && generation < c.generation && this.host.launchedHere(generation)) {
      throw new PaddockError(
        'STALE_GENERATION',
        `${terminalId} belongs to generation ${generation}, which was replaced by generation ${c.generation}; its shell is gone. Call list_terminals or create_terminal.`,
      );
    }
    const gen = this.current;
    const terminal = gen && c && gen.computer === c ? gen.terminals.get(n) : undefined;
    if (!gen || !terminal || terminal.generation !== generation) {
      throw new PaddockError(
        'NOT_FOUND',
        `No terminal ${terminalId} in the current computer; call list_terminals for the ids, or create_terminal.`,
      );
    }
    return { gen, terminal };
  }

  private requireLive(terminal: Terminal): void {
    if (!terminal.exited) return;
    throw new PaddockError(
      'NOT_RUNNING',
      `The shell of ${terminal.id} has exited, so it takes no input; its output stays readable. Call create_terminal for a new one.`,
    );
  }

  /** The current generation's state, if it belongs to the current computer. */
  private live(): GenerationTerminals | null {
    const gen = this.current;
    return gen && gen.computer === this.host.computer ? gen : null;
  }

  /** The state of `c`, attaching to its channels the first time. */
  private generationOf(c: Generation): GenerationTerminals {
    if (this.current?.computer === c) return this.current;
    const gen: GenerationTerminals = { computer: c, terminals: new Map(), active: null, next: 1 };
    this.current = gen;
    c.streams.attach(this.owner(gen));
    return gen;
  }

  private owner(gen: GenerationTerminals): StreamOwner {
    const byChannel = (stream: number) => gen.terminals.get(stream - TERMINAL_STREAM_BASE);
    return {
      owns: (stream) => stream >= TERMINAL_STREAM_BASE && stream < TERMINAL_STREAM_BASE + STREAM_RANGE,
      onData: (stream, _stream, payload) => byChannel(stream)?.append(payload),
      onEnd: () => undefined,
      onWindow: () => undefined,
      onEvent: (event: StreamEvent) => {
        if (event.t !== 'pty.exit') return;
        const t = byChannel(event.stream);
        if (!t || t.exited) return;
        t.markExited(event.exitCode, event.signal);
        const how = event.signal ? `was killed by ${event.signal}` : `exited with code ${event.exitCode}`;
        this.host.log.add('info', 'terminal.exit', `The shell of ${t.id} ${how}.`, {
          generation: t.generation,
        });
        this.changed();
      },
      onClose: () => {
        for (const t of gen.terminals.values()) t.markExited(null, 'SIGKILL');
        // The manager switches to the next generation right after; listeners then list it.
        queueMicrotask(() => this.changed());
      },
    };
  }

  private info(gen: GenerationTerminals, t: Terminal): TerminalInfo {
    const hold = this.activeHold(t);
    return {
      heldBy: hold?.who ?? null,
      heldUntil: hold?.until ?? null,
      id: t.id,
      label: t.label,
      ready: t.ready,
      active: gen.active === t.n,
      exited: t.exited,
      exitCode: t.exitCode,
      signal: t.signal,
      cols: t.cols,
      rows: t.rows,
    };
  }

  /** Forgets the oldest exited terminals beyond MAX_KEPT_TERMINALS. */
  private prune(gen: GenerationTerminals): void {
    for (const [n, t] of gen.terminals) {
      if (gen.terminals.size <= MAX_KEPT_TERMINALS) return;
      if (t.exited && n !== gen.active) gen.terminals.delete(n);
    }
  }

  private changed(): void {
    this.changes.emit();
  }
}
