/**
 * TCP connections inside the guest, as Node duplex streams on the host: the preview relay's
 * transport. Each connection is a stream of the guest link (host → guest bytes on fd 0,
 * guest → host on fd 1) with credit-based flow control both ways, so neither side
 * buffers more than one window per connection however slow the other is.
 */
import { Duplex } from 'node:stream';
import { Fd, FrameKind } from '../../guest/frames.js';
import { PaddockError } from '../../shared/errors.js';
import type { GuestChannel } from './guest-channel.js';
import { RELAY_STREAM_BASE, STREAM_RANGE, type StreamEvent, type StreamOwner } from './stream-router.js';

/** Bytes in flight per direction and connection before the receiver grants more. */
export const RELAY_WINDOW_BYTES = 512 * 1024;
/**
 * Bytes in flight per direction of an egress connection: a download that the computer's programs
 * read as fast as it comes keeps this much moving while the three processes on the path wait for
 * the CPU (a busy machine), so it bounds throughput at window ÷ wake-up delay.
 */
export const EGRESS_WINDOW_BYTES = 2 * 1024 * 1024;
/** Largest data frame the host sends. */
const MAX_FRAME_BYTES = 256 * 1024;
/** How long connecting inside the guest may take. */
const OPEN_TIMEOUT_MS = 5000;

/** One TCP connection inside the guest. */
export class GuestSocket extends Duplex {
  /** Bytes the host may still send before the guest grants more. */
  private sendCredit: number;
  /** Credit for the guest held back while our reader is slow. */
  private withheld = 0;
  private pending: { chunk: Buffer; callback: (error?: Error | null) => void } | null = null;
  private remoteClosed = false;
  private ended = false;
  /** Bytes received from the guest so far. */
  receivedBytes = 0;

  constructor(
    private readonly computer: GuestChannel,
    readonly stream: number,
    private readonly onGone: () => void,
    windowBytes = RELAY_WINDOW_BYTES,
  ) {
    super({ allowHalfOpen: true, readableHighWaterMark: Math.min(windowBytes, 1024 * 1024) });
    this.sendCredit = windowBytes;
    // Failures reach the consumer's own listener; without one they must not crash the server.
    this.on('error', () => undefined);
  }

  override _write(chunk: Buffer, _encoding: BufferEncoding, callback: (error?: Error | null) => void): void {
    this.pending = { chunk, callback };
    this.flush();
  }

  override _final(callback: (error?: Error | null) => void): void {
    if (!this.remoteClosed) this.computer.sendFrame(FrameKind.End, this.stream, Fd.Stdin, Buffer.alloc(0));
    callback();
  }

  override _read(): void {
    if (this.withheld === 0) return;
    this.grant(this.withheld);
    this.withheld = 0;
  }

  override _destroy(error: Error | null, callback: (error?: Error | null) => void): void {
    if (!this.remoteClosed) {
      this.remoteClosed = true;
      if (this.computer.lifecycle === 'running')
        this.computer.call('tcp.close', { stream: this.stream }).catch(() => undefined);
    }
    this.failPending(error ?? new Error('connection closed'));
    this.onGone();
    callback(error);
  }

  /** Bytes from the guest's server. */
  receive(payload: Buffer): void {
    if (this.destroyed || this.ended) return;
    this.receivedBytes += payload.length;
    // the payload is the link's read buffer, reused once this returns
    if (this.push(Buffer.from(payload))) this.grant(payload.length);
    else this.withheld += payload.length;
  }

  /** The guest's server finished sending. */
  receiveEnd(): void {
    this.ended = true;
    if (!this.destroyed) this.push(null);
  }

  /** The guest wrote our bytes to the server: more may follow. */
  receiveCredit(bytes: number): void {
    this.sendCredit += bytes;
    this.flush();
  }

  /**
   * The connection is gone inside the guest. Emits `hangup` at once, even while the readable side
   * is paused (its `end` waits for a reader), so a decision that waits can stop waiting.
   */
  remoteGone(error: string | null): void {
    this.remoteClosed = true;
    this.emit('hangup');
    this.failPending(new Error(error ?? 'the server closed the connection'));
    if (error) this.destroy(new Error(`preview connection failed inside the computer: ${error}`));
    else {
      this.ended = true;
      this.push(null);
      this.onGone();
    }
  }

  private flush(): void {
    const p = this.pending;
    if (!p) return;
    if (this.remoteClosed) {
      this.failPending(new Error('the server closed the connection'));
      return;
    }
    let chunk = p.chunk;
    while (chunk.length > 0 && this.sendCredit > 0) {
      const piece = chunk.subarray(0, Math.min(chunk.length, this.sendCredit, MAX_FRAME_BYTES));
      this.computer.sendFrame(FrameKind.Data, this.stream, Fd.Stdin, piece);
      this.sendCredit -= piece.length;
      chunk = chunk.subarray(piece.length);
    }
    if (chunk.length > 0) {
      p.chunk = chunk;
      return;
    }
    this.pending = null;
    p.callback();
  }

  private failPending(error: Error): void {
    const p = this.pending;
    this.pending = null;
    p?.callback(error);
  }

  private grant(bytes: number): void {
    const payload = Buffer.allocUnsafe(4);
    payload.writeUInt32BE(bytes, 0);
    this.computer.sendFrame(FrameKind.Window, this.stream, Fd.Stdout, payload);
  }
}

/**
 * Relayed connections of one generation by stream, as a stream owner: frames and the guest's
 * `tcp.closed` go to their socket. Subclasses say which streams are theirs.
 */
export abstract class RelayedSockets implements StreamOwner {
  readonly sockets = new Map<number, GuestSocket>();
  closed = false;

  abstract owns(stream: number): boolean;

  onData(stream: number, _stream: number, payload: Buffer): void {
    this.sockets.get(stream)?.receive(payload);
  }

  onEnd(stream: number): void {
    this.sockets.get(stream)?.receiveEnd();
  }

  onWindow(stream: number, _stream: number, bytes: number): void {
    this.sockets.get(stream)?.receiveCredit(bytes);
  }

  onEvent(event: StreamEvent): void {
    if (event.t === 'tcp.closed') this.sockets.get(event.stream)?.remoteGone(event.error);
  }

  onClose(reason: string): void {
    this.closed = true;
    for (const socket of [...this.sockets.values()]) socket.remoteGone(reason);
    this.sockets.clear();
  }
}

/** The relayed preview connections of one generation (a stream owner of its computer). */
class GenerationRelay extends RelayedSockets {
  private next = 0;

  constructor(readonly computer: GuestChannel) {
    super();
  }

  async open(port: number): Promise<GuestSocket> {
    if (this.closed) throw new PaddockError('NOT_RUNNING', 'The computer was replaced; reload the preview.');
    this.next = (this.next + 1) % STREAM_RANGE;
    const stream = RELAY_STREAM_BASE + this.next;
    const socket = new GuestSocket(this.computer, stream, () => this.sockets.delete(stream));
    this.sockets.set(stream, socket);
    try {
      await this.computer.call(
        'tcp.open',
        { stream, port, windowBytes: RELAY_WINDOW_BYTES },
        { timeoutMs: OPEN_TIMEOUT_MS },
      );
    } catch (e) {
      this.sockets.delete(stream);
      socket.destroy();
      throw e;
    }
    return socket;
  }

  owns(stream: number): boolean {
    return stream >= RELAY_STREAM_BASE && stream < RELAY_STREAM_BASE + STREAM_RANGE;
  }
}

/** Opens TCP connections inside the current computer. */
export class GuestConnector {
  private relay: GenerationRelay | null = null;

  /** Connects to 127.0.0.1:`port` inside `c`; NOT_FOUND (reason `refused`) when nothing listens. */
  open(c: GuestChannel, port: number): Promise<GuestSocket> {
    if (this.relay?.computer !== c) {
      this.relay = new GenerationRelay(c);
      c.streams.attach(this.relay);
    }
    return this.relay.open(port);
  }

  /** Connections open right now (diagnostics and tests). */
  get openConnections(): number {
    return this.relay?.sockets.size ?? 0;
  }

  /** Per open connection: bytes received from the guest and bytes waiting for our reader. */
  stats(): { stream: number; receivedBytes: number; bufferedBytes: number }[] {
    return [...(this.relay?.sockets.values() ?? [])].map((s) => ({
      stream: s.stream,
      receivedBytes: s.receivedBytes,
      bufferedBytes: s.readableLength,
    }));
  }
}
