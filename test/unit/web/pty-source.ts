/**
 * A TerminalSource over real PTYs on the test host (node-pty running /bin/sh), with the
 * contract the guest's terminals follow: retained output by cursor, replay then live data,
 * one active terminal. Used to test the dock's side of the contract end to end.
 */
import pty from '@lydell/node-pty';
import { PaddockError } from '../../../src/shared/errors.js';
import type { DockTerminal } from '../../../src/web/dock/protocol.js';
import type { Disposable, TerminalChunk, TerminalSource } from '../../../src/web/dock/sources.js';

interface Term {
  info: DockTerminal;
  proc: pty.IPty;
  output: string;
  /** Absolute offset of output[0]. */
  start: number;
  size: { cols: number; rows: number };
  subscribers: Set<(chunk: TerminalChunk) => void>;
}

export class PtyTerminalSource implements TerminalSource {
  private readonly terms = new Map<string, Term>();
  private readonly listeners = new Set<() => void>();
  readonly writes: { terminalId: string; data: string }[] = [];
  private next = 1;

  constructor(private readonly retentionChars = 64 * 1024) {}

  create(label: string): string {
    const id = `g1.term${this.next++}`;
    const proc = pty.spawn('/bin/sh', [], {
      name: 'xterm-256color',
      cols: 80,
      rows: 24,
      cwd: '/tmp',
      env: { PATH: '/usr/bin:/bin', TERM: 'xterm-256color', PS1: '$ ', LANG: 'C.UTF-8' },
    });
    const term: Term = {
      info: { id, label, ready: true, active: false },
      proc,
      output: '',
      start: 0,
      size: { cols: 80, rows: 24 },
      subscribers: new Set(),
    };
    proc.onData((data) => {
      term.output += data;
      if (term.output.length > this.retentionChars) {
        const drop = term.output.length - this.retentionChars;
        term.output = term.output.slice(drop);
        term.start += drop;
      }
      const cursor = `t.${term.start + term.output.length}`;
      for (const s of term.subscribers) s({ data, cursor, gap: false });
    });
    this.terms.set(id, term);
    this.activate(id);
    return id;
  }

  /** The agent types into a terminal (as send_terminal_input would). */
  agentWrite(id: string, data: string): void {
    this.get(id).proc.write(data);
  }

  sizeOf(id: string): { cols: number; rows: number } {
    return this.get(id).size;
  }

  list(): DockTerminal[] {
    return [...this.terms.values()].map((t) => ({ ...t.info }));
  }

  async write(terminalId: string, data: string): Promise<void> {
    this.writes.push({ terminalId, data });
    this.get(terminalId).proc.write(data);
  }

  async resize(terminalId: string, cols: number, rows: number): Promise<void> {
    const t = this.get(terminalId);
    t.proc.resize(cols, rows);
    t.size = { cols, rows };
  }

  async activate(terminalId: string): Promise<void> {
    this.get(terminalId);
    for (const t of this.terms.values()) t.info.active = t.info.id === terminalId;
    for (const l of this.listeners) l();
  }

  subscribe(
    terminalId: string,
    fromCursor: string | undefined,
    onData: (chunk: TerminalChunk) => void,
  ): Disposable {
    const t = this.get(terminalId);
    const end = t.start + t.output.length;
    const from = fromCursor === undefined ? t.start : Number(fromCursor.slice(2));
    const gap = from < t.start;
    const replay = t.output.slice(Math.max(0, from - t.start));
    if (replay.length > 0 || gap) onData({ data: replay, cursor: `t.${end}`, gap });
    t.subscribers.add(onData);
    return { dispose: () => t.subscribers.delete(onData) };
  }

  onChange(listener: () => void): Disposable {
    this.listeners.add(listener);
    return { dispose: () => this.listeners.delete(listener) };
  }

  close(): void {
    for (const t of this.terms.values()) t.proc.kill();
    this.terms.clear();
  }

  private get(id: string): Term {
    const t = this.terms.get(id);
    if (!t) throw new PaddockError('NOT_FOUND', `No terminal ${id}; use an id from list_terminals.`);
    return t;
  }
}
