/**
 * Preview connections of a browser computer: the guest protocol's `tcp.open` relayed through the
 * agent, which connects `nc` to 127.0.0.1:<port> inside the emulated machine. The host's bytes go
 * as `tcpw` requests (each chunk after its line, like a file write's); what the server answers
 * comes back as events, `@d c<stream> 1 <base64>` and `@e c<stream> 1`, and the end of `nc` as
 * `@x c<stream> <status>`. Events come from the page, so they are checked like a job's.
 */

import { GuestFailure } from '../../../guest/failure.js';
import { Fd, FrameKind } from '../../../guest/frames.js';
import type { CallArgs } from '../../../guest/protocol.js';
import type { AgentEvent } from './agent-line.js';
import { AgentError, eventBytes } from './agent-line.js';
import type { JobIo } from './jobs.js';

/** Bytes of one `tcpw` (its base64 follows the request line, like a file write's chunk). */
const WRITE_CHUNK_BYTES = 24 * 1024;
/** Connections open at once (each is a few processes in the emulated machine). */
const MAX_CONNECTIONS = 16;
/** After `nc` ended, how long its last bytes may take to arrive before the connection is closed. */
const END_WAIT_MS = 3000;

interface Connection {
  stream: number;
  /** Writes to the server, in order. */
  writing: Promise<unknown>;
  /** The server's side ended (`@e`). */
  ended: boolean;
  /** `nc` exited (`@x`). */
  exited: boolean;
  timer: NodeJS.Timeout | null;
}

/** Connection names on the agent's port: `c` and the stream. */
function nameOf(stream: number): string {
  return `c${stream}`;
}

/** The preview connections of one browser computer. */
export class BrowserConnections {
  private readonly connections = new Map<number, Connection>();

  constructor(private readonly io: Pick<JobIo, 'agent' | 'send' | 'message'>) {}

  /** Connects to `port` in the guest; the agent refuses when nothing listens there. */
  async open(a: CallArgs<'tcp.open'>): Promise<Record<string, never>> {
    if (this.connections.has(a.stream))
      throw new GuestFailure(
        'INVALID_ARGUMENT',
        `Stream ${a.stream} is already a connection; use a new one.`,
      );
    if (this.connections.size >= MAX_CONNECTIONS) {
      throw new GuestFailure(
        'LIMIT_EXCEEDED',
        `${MAX_CONNECTIONS} preview connections of the browser computer are open; close some (reload fewer tabs) and retry.`,
      );
    }
    const c: Connection = {
      stream: a.stream,
      writing: Promise.resolve(),
      ended: false,
      exited: false,
      timer: null,
    };
    this.connections.set(a.stream, c);
    try {
      await this.io.agent.request('tcp', [nameOf(a.stream), a.port]);
    } catch (e) {
      this.connections.delete(a.stream);
      // nothing listens: the same answer as a refused connection in any other computer
      if (e instanceof AgentError && e.code === 'NOT_FOUND')
        throw new GuestFailure('NOT_FOUND', e.message, { reason: 'refused' });
      throw e;
    }
    return {};
  }

  /** Drops a connection at once. */
  async close(stream: number): Promise<void> {
    const c = this.connections.get(stream);
    if (!c) return;
    this.forget(c);
    await this.io.agent.request('tcpx', [nameOf(stream)]);
  }

  /** Whether `stream` is a connection here. */
  has(stream: number): boolean {
    return this.connections.has(stream);
  }

  /** Bytes (or their end) from the host for the server; credit is granted once written. */
  onHostFrame(kind: number, stream: number, payload: Buffer): void {
    const c = this.connections.get(stream);
    if (!c) return;
    if (kind === FrameKind.End) {
      c.writing = c.writing
        .then(() => this.io.agent.request('tcpe', [nameOf(stream)]))
        .catch(() => undefined);
      return;
    }
    if (kind !== FrameKind.Data) return; // credit the host grants: the serial port paces the server
    for (let at = 0; at < payload.length; at += WRITE_CHUNK_BYTES) {
      const chunk = payload.subarray(at, at + WRITE_CHUNK_BYTES);
      const text = chunk.toString('base64');
      c.writing = c.writing
        .then(() => this.io.agent.request('tcpw', [nameOf(stream), text.length], text))
        .then(() => {
          const credit = Buffer.alloc(4);
          credit.writeUInt32BE(chunk.length);
          if (this.connections.get(stream) === c) this.io.send(FrameKind.Window, stream, Fd.Stdin, credit);
        })
        .catch(() => undefined);
    }
  }

  /** An event of a connection (`c…`); returns why it is malformed, or null. */
  onEvent(event: AgentEvent): string | null {
    const [name, second, data, ...rest] = event.fields;
    const c = this.connections.get(Number(name?.slice(1)));
    if (event.kind === 'x') {
      if (!/^\d{1,3}$/.test(second ?? '') || data !== undefined) return 'a connection status is not a number';
      if (c && !c.exited) {
        c.exited = true;
        if (c.ended) this.closed(c);
        else c.timer = setTimeout(() => this.closed(c), END_WAIT_MS);
      }
      return null;
    }
    if (second !== '1') return `fd "${String(second).slice(0, 20)}" of a connection is not 1`;
    if (event.kind === 'e') {
      if (data !== undefined) return 'an end carries no data';
      if (c && !c.ended) {
        c.ended = true;
        this.io.send(FrameKind.End, c.stream, Fd.Stdout, Buffer.alloc(0));
        if (c.exited) this.closed(c);
      }
      return null;
    }
    const bytes = eventBytes(data, rest);
    if (typeof bytes === 'string') return bytes;
    if (c && !c.ended) this.io.send(FrameKind.Data, c.stream, Fd.Stdout, bytes);
    return null;
  }

  /** Forgets every connection (the VM is gone). */
  clear(): void {
    for (const c of this.connections.values()) if (c.timer) clearTimeout(c.timer);
    this.connections.clear();
  }

  /** `nc` ended and the server's bytes are all relayed: the connection is gone. */
  private closed(c: Connection): void {
    if (this.connections.get(c.stream) !== c) return;
    this.forget(c);
    if (!c.ended) this.io.send(FrameKind.End, c.stream, Fd.Stdout, Buffer.alloc(0));
    this.io.message({ t: 'tcp.closed', stream: c.stream, error: null });
    this.io.agent.request('tcpx', [nameOf(c.stream)]).catch(() => undefined);
  }

  private forget(c: Connection): void {
    if (c.timer) clearTimeout(c.timer);
    this.connections.delete(c.stream);
  }
}
