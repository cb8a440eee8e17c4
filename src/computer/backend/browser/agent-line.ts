/**
 * The server's end of the browser computer's agent (scripts/browser-image/agent.sh): one request
 * line at a time over the guest's first serial port, one reply line each, and between them the
 * events a job pushes (its output, the end of a stream, its exit). The bytes come from a dock
 * page, so every line is parsed strictly: a reply that does not answer the request in flight, or
 * an event the listener refuses, breaks the link, and the computer with it.
 */
import { randomBytes } from 'node:crypto';
import type { Disposable } from '../../../shared/disposable.js';

/** The serial ports of a VM hosted by a page, as the server sees them. */
export interface BrowserVmLink {
  /** Bytes to a serial port of the guest (1: the agent, 2: the terminal). */
  send(port: 1 | 2, data: Buffer): void;
  /** Bytes a serial port of the guest wrote. */
  onData(listener: (port: 1 | 2, data: Buffer) => void): Disposable;
  /** Settles when the page hosting the VM went away (or the VM was stopped), with why. */
  readonly gone: Promise<string>;
  /** Stops the VM in its page (idempotent); `gone` settles with `reason` when given. */
  close(reason?: string): void;
}

/** An error the agent answered with: a guest error code and its message. */
export class AgentError extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

/** Longest reply line accepted (a 48 KiB read in base64 plus fields, with room). */
const MAX_LINE_BYTES = 256 * 1024;
/**
 * Longest request line. Longer lines arrive intact (48 KiB was tried), but the agent's shell reads
 * a line one byte per system call, so a long line holds every other request up for many seconds.
 */
export const MAX_REQUEST_BYTES = 3 * 1024;
const TOKEN = /^[A-Za-z0-9+/=_.-]+$/;
/** How often a restored agent is greeted until it answers. */
const WAKE_INTERVAL_MS = 2000;

/** An event line a job pushed: `@d`, `@e` or `@x` and its fields. */
export interface AgentEvent {
  kind: 'd' | 'e' | 'x';
  fields: string[];
}

interface InFlight {
  rid: number;
  resolve(fields: string[]): void;
  reject(e: Error): void;
}

/** Base64 of a string, or "-" for the empty string (the agent's empty field). */
export function field(text: string | Buffer): string {
  const b = Buffer.isBuffer(text) ? text : Buffer.from(text, 'utf8');
  return b.length === 0 ? '-' : b.toString('base64');
}

/** The bytes of a base64 field ("-": none). Throws on anything else. */
export function bytesOf(f: string | undefined): Buffer {
  if (f === undefined) throw new Error('a field is missing');
  if (f === '-') return Buffer.alloc(0);
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(f)) throw new Error('a field is not base64');
  return Buffer.from(f, 'base64');
}

/** The bytes of an `@d` event's one base64 field, or why the event is malformed. */
export function eventBytes(data: string | undefined, rest: string[]): Buffer | string {
  let bytes: Buffer;
  try {
    bytes = bytesOf(data);
  } catch (e) {
    return (e as Error).message;
  }
  return rest.length > 0 || bytes.length === 0 ? 'output is one non-empty base64 field' : bytes;
}

/** Requests to the agent, answered in order. */
export class AgentLine {
  private buffer = Buffer.alloc(0);
  private nextRid = 1;
  private current: InFlight | null = null;
  private readonly queue: Array<{
    line: string;
    payload: string | undefined;
    resolve(f: string[]): void;
    reject(e: Error): void;
  }> = [];
  private failure: Error | null = null;
  private announced = false;
  private readyResolve!: (uptime: string) => void;
  private readyReject!: (e: Error) => void;
  /** Settles when the agent announced itself (with the guest's uptime at that moment). */
  readonly ready = new Promise<string>((resolve, reject) => {
    this.readyResolve = resolve;
    this.readyReject = reject;
  });

  constructor(
    private readonly link: BrowserVmLink,
    private readonly onBroken: (reason: string) => void,
    /** Takes an event; returns why it is malformed (which breaks the link), or null. */
    private readonly onEvent: (event: AgentEvent) => string | null = () => 'no job events are expected',
  ) {
    this.ready.catch(() => undefined);
  }

  /** Bytes from serial port 1. */
  push(data: Buffer): void {
    if (this.failure) return;
    this.buffer = Buffer.concat([this.buffer, data]);
    for (;;) {
      const nl = this.buffer.indexOf(10);
      if (nl < 0) break;
      const line = this.buffer.subarray(0, nl).toString('latin1').replace(/\r$/, '');
      this.buffer = this.buffer.subarray(nl + 1);
      this.onLine(line);
      if (this.failure) return;
    }
    if (this.buffer.length > MAX_LINE_BYTES)
      this.break(`a reply line is longer than ${MAX_LINE_BYTES} bytes`);
  }

  /**
   * Sends `op` with its fields, and `payload` right after the line when given (the agent takes
   * it with one counted read); resolves with the reply's fields after `ok`.
   */
  request(op: string, args: Array<string | number>, payload?: string): Promise<string[]> {
    if (this.failure) return Promise.reject(this.failure);
    for (const a of args) {
      if (!TOKEN.test(String(a)))
        throw new Error(`agent argument "${String(a).slice(0, 40)}" is not a token`);
    }
    const line = [op, ...args].join(' ');
    if (line.length > MAX_REQUEST_BYTES) throw new Error(`agent request of ${line.length} bytes is too long`);
    if (payload !== undefined && !/^[A-Za-z0-9+/=]*$/.test(payload))
      throw new Error('an agent payload is not base64');
    return new Promise((resolve, reject) => {
      this.queue.push({ line, payload, resolve, reject });
      this.pump();
    });
  }

  /**
   * Wakes an agent restored from a snapshot: `hello` with the time and fresh randomness (every
   * restored machine starts with the same generator state). The page holds the bytes until its
   * restore has finished; the greeting is repeated until the agent announces itself all the same,
   * in case a page lost it.
   */
  wake(everyMs = WAKE_INTERVAL_MS): void {
    const hello = () => {
      if (this.announced || this.failure) return;
      const seed = randomBytes(32).toString('base64');
      this.link.send(1, Buffer.from(`0 hello ${Math.floor(Date.now() / 1000)} ${seed}\n`, 'latin1'));
      timer.refresh();
    };
    const timer = setTimeout(hello, everyMs);
    this.ready.then(
      () => clearTimeout(timer),
      () => clearTimeout(timer),
    );
    hello();
  }

  /** Fails every request, now and later. */
  fail(e: Error): void {
    if (this.failure) return;
    this.failure = e;
    this.readyReject(e);
    this.current?.reject(e);
    this.current = null;
    for (const q of this.queue.splice(0)) q.reject(e);
  }

  private pump(): void {
    if (this.current || this.failure) return;
    const next = this.queue.shift();
    if (!next) return;
    const rid = this.nextRid++;
    this.current = { rid, resolve: next.resolve, reject: next.reject };
    this.link.send(1, Buffer.from(`${rid} ${next.line}\n${next.payload ?? ''}`, 'latin1'));
  }

  private onLine(line: string): void {
    if (!line.startsWith('@')) return; // the tty's own noise before the agent took the port
    const [head, status, ...fields] = line.split(' ');
    if (head === '@d' || head === '@e' || head === '@x') {
      const refused = this.onEvent({ kind: head[1] as AgentEvent['kind'], fields: line.split(' ').slice(1) });
      if (refused) this.break(`the agent pushed a malformed event: ${refused}`);
      return;
    }
    const rid = Number(head?.slice(1));
    if (rid === 0 && status === 'ready') {
      this.announced = true;
      this.readyResolve(fields[1] ?? '');
      return;
    }
    // nothing was asked before the agent announced itself: a line then is the port's noise
    if (!this.announced) return;
    const current = this.current;
    if (!current || rid !== current.rid) {
      this.break(`the agent answered request ${head?.slice(1)} while ${current?.rid ?? 'none'} was asked`);
      return;
    }
    this.current = null;
    if (status === 'ok') current.resolve(fields);
    else if (status === 'err') {
      let message: string;
      try {
        message = bytesOf(fields[1]).toString('utf8').slice(0, 4096);
      } catch {
        message = 'the agent failed';
      }
      current.reject(new AgentError(fields[0] ?? 'INTERNAL', message));
    } else {
      this.break(`the agent answered "${String(status).slice(0, 20)}"`);
      return;
    }
    this.pump();
  }

  /** Breaks the link because a reply did not make sense (a field of the wrong form). */
  violation(reason: string): void {
    this.break(reason);
  }

  private break(reason: string): void {
    this.fail(new Error(reason));
    this.onBroken(reason);
  }
}
