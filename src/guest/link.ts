/**
 * The guest end of the link: reads frames from the host on fd 0, writes frames to the host on
 * fd 1 with backpressure (a producer that gets `false` pauses until `onDrain`).
 */
import { Socket } from 'node:net';
import {
  encodeFrame,
  encodeFrameHeader,
  type Frame,
  FrameDecoder,
  FrameKind,
  type FrameKindValue,
} from './frames.js';
import type { GuestError, GuestMessage } from './protocol.js';

/** Frames written by the guest; the stdout socket of the agent. */
export class GuestLink {
  private readonly out: Socket;
  private readonly input: Socket;
  private readonly drainWaiters = new Set<() => void>();
  private closed = false;

  constructor(onFrame: (frame: Frame) => void, onClose: () => void) {
    this.out = new Socket({ fd: 1, readable: false, writable: true });
    this.input = new Socket({ fd: 0, readable: true, writable: false });
    this.out.on('drain', () => {
      const waiters = [...this.drainWaiters];
      this.drainWaiters.clear();
      for (const w of waiters) w();
    });
    this.out.on('error', () => this.close(onClose));
    const decoder = new FrameDecoder();
    this.input.on('data', (chunk: Buffer) => {
      let frames: Frame[];
      try {
        frames = decoder.push(chunk);
      } catch (e) {
        this.log('err', `protocol error from host: ${(e as Error).message}`);
        this.close(onClose);
        return;
      }
      for (const f of frames) onFrame(f);
    });
    this.input.on('end', () => this.close(onClose));
    this.input.on('error', () => this.close(onClose));
  }

  /** Sends one control message. */
  send(message: GuestMessage): void {
    if (this.closed) return;
    this.out.write(encodeFrame(FrameKind.Control, 0, 0, Buffer.from(JSON.stringify(message))));
  }

  /** Sends a successful reply, with its binary attachment first when there is one. */
  reply(id: number, value: unknown, attachment?: Buffer): void {
    if (attachment) this.sendRaw(FrameKind.Attachment, id, 0, attachment);
    this.send({ t: 'reply', id, ok: true, value });
  }

  /** Sends a failed reply. */
  fail(id: number, error: GuestError): void {
    this.send({ t: 'reply', id, ok: false, error });
  }

  /** Sends stream bytes; `false` means the host link is congested: pause and wait for `onDrain`. */
  sendData(stream: number, fd: number, payload: Buffer): boolean {
    return this.sendRaw(FrameKind.Data, stream, fd, payload);
  }

  /** Marks a stream as ended. */
  sendEnd(stream: number, fd: number): void {
    this.sendRaw(FrameKind.End, stream, fd, Buffer.alloc(0));
  }

  /** Grants the host `bytes` more credit on `stream`/`fd` (flow control of relayed connections). */
  sendWindow(stream: number, fd: number, bytes: number): void {
    const payload = Buffer.allocUnsafe(4);
    payload.writeUInt32BE(bytes >>> 0, 0);
    this.sendRaw(FrameKind.Window, stream, fd, payload);
  }

  /** Runs `callback` once the outgoing buffer has drained. */
  onDrain(callback: () => void): void {
    if (this.closed) return;
    this.drainWaiters.add(callback);
  }

  /** A diagnostic line for the host's logs. */
  log(level: 'debug' | 'info' | 'warn' | 'err', message: string): void {
    this.send({ t: 'log', level, message: message.slice(0, 4096) });
  }

  private sendRaw(kind: FrameKindValue, stream: number, fd: number, payload: Buffer): boolean {
    if (this.closed) return true;
    this.out.cork();
    this.out.write(encodeFrameHeader(kind, stream, fd, payload.length));
    const ok = payload.length > 0 ? this.out.write(payload) : true;
    this.out.uncork();
    return ok && this.out.writableLength < this.out.writableHighWaterMark;
  }

  private close(onClose: () => void): void {
    if (this.closed) return;
    this.closed = true;
    onClose();
  }
}
