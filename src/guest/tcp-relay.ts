/**
 * The preview relay inside the guest: TCP connections to 127.0.0.1:<port>, carried over the
 * agent's link as channels (host → guest bytes on stream 0, guest → host on stream 1). The
 * network namespace stays closed: the host never reaches the guest's network, the agent
 * connects on its behalf.
 *
 * Flow control per connection: each direction may have `windowBytes` unacknowledged bytes in
 * flight. The agent stops reading the server's socket when its credit is spent (or the link
 * is congested) and resumes when the host grants more with a Window frame; it grants the
 * host credit once bytes were written to the server's socket.
 */
import { connect, type Socket } from 'node:net';
import { errnoOf, GuestFailure } from './failure.js';
import { Fd, type Frame, FrameKind } from './frames.js';
import type { GuestLink } from './link.js';
import type { CallArgs } from './protocol.js';

/** Relayed connections open at the same time. */
export const MAX_RELAYED_CONNECTIONS = 256;

interface Relay {
  socket: Socket;
  /** Bytes the agent may still send to the host before it grants more. */
  credit: number;
  linkBlocked: boolean;
  error: string | null;
}

/** The relayed TCP connections of this agent, by channel. */
export class TcpRelay {
  private readonly relays = new Map<number, Relay>();
  private opening = 0;

  constructor(private readonly link: GuestLink) {}

  /** Connects to 127.0.0.1:`port`; resolves once connected. */
  open(args: CallArgs<'tcp.open'>): Promise<Record<string, never>> {
    if (this.relays.has(args.stream)) {
      return Promise.reject(
        new GuestFailure('INVALID_ARGUMENT', `Channel ${args.stream} is already in use; use a new one.`),
      );
    }
    if (this.relays.size + this.opening >= MAX_RELAYED_CONNECTIONS) {
      return Promise.reject(
        new GuestFailure(
          'LIMIT_EXCEEDED',
          `${MAX_RELAYED_CONNECTIONS} preview connections are already open; close some (reload fewer tabs) and retry.`,
        ),
      );
    }
    this.opening += 1;
    return new Promise((resolve, reject) => {
      const socket = connect({ host: '127.0.0.1', port: args.port });
      const failed = (e: Error) => {
        this.opening -= 1;
        const code = errnoOf(e) ?? 'error';
        reject(
          new GuestFailure(
            'NOT_FOUND',
            code === 'ECONNREFUSED'
              ? `Nothing listens on port ${args.port} inside the computer; start a server on that port first.`
              : `Could not connect to port ${args.port} inside the computer (${code}); check the server there.`,
            { reason: code === 'ECONNREFUSED' ? 'refused' : code },
          ),
        );
      };
      socket.once('error', failed);
      socket.once('connect', () => {
        this.opening -= 1;
        socket.off('error', failed);
        socket.setNoDelay(true);
        const relay: Relay = { socket, credit: args.windowBytes, linkBlocked: false, error: null };
        this.relays.set(args.stream, relay);
        this.wire(args.stream, relay);
        resolve({});
      });
    });
  }

  /**
   * Relays a connection the agent accepted (the egress relay) on `stream`, exactly like one it
   * opened: false when the channel is taken or too many connections are open.
   */
  adopt(stream: number, socket: Socket, windowBytes: number): boolean {
    if (this.relays.has(stream) || this.relays.size + this.opening >= MAX_RELAYED_CONNECTIONS) return false;
    socket.setNoDelay(true);
    const relay: Relay = { socket, credit: windowBytes, linkBlocked: false, error: null };
    this.relays.set(stream, relay);
    this.wire(stream, relay);
    return true;
  }

  /** A stream frame from the host: bytes for the server, their end, or credit. */
  onFrame(frame: Frame): void {
    if (frame.kind === FrameKind.Data) this.onData(frame.stream, frame.payload);
    else if (frame.kind === FrameKind.End) this.onEnd(frame.stream);
    else if (frame.kind === FrameKind.Window && frame.payload.length === 4)
      this.onWindow(frame.stream, frame.payload.readUInt32BE(0));
  }

  /** Bytes from the host for the server. */
  onData(stream: number, payload: Buffer): void {
    const relay = this.relays.get(stream);
    if (!relay || relay.socket.destroyed) return;
    relay.socket.write(payload, () => this.link.sendWindow(stream, Fd.Stdin, payload.length));
  }

  /** The host finished sending (half-close towards the server). */
  onEnd(stream: number): void {
    this.relays.get(stream)?.socket.end();
  }

  /** The host consumed bytes: more may be sent. */
  onWindow(stream: number, bytes: number): void {
    const relay = this.relays.get(stream);
    if (!relay) return;
    relay.credit += bytes;
    this.maybeResume(relay);
  }

  /** Drops a connection at once. */
  close(stream: number): void {
    this.relays.get(stream)?.socket.destroy();
  }

  /** Drops every connection (the agent is shutting down). */
  closeAll(): void {
    for (const relay of this.relays.values()) relay.socket.destroy();
  }

  private wire(stream: number, relay: Relay): void {
    const { socket } = relay;
    socket.on('data', (chunk: Buffer) => {
      relay.credit -= chunk.length;
      if (!this.link.sendData(stream, Fd.Stdout, chunk) && !relay.linkBlocked) {
        relay.linkBlocked = true;
        this.link.onDrain(() => {
          relay.linkBlocked = false;
          this.maybeResume(relay);
        });
      }
      if (relay.credit <= 0 || relay.linkBlocked) socket.pause();
    });
    socket.on('end', () => this.link.sendEnd(stream, Fd.Stdout));
    socket.on('error', (e) => {
      relay.error = `${errnoOf(e) ?? 'error'}: ${e.message}`.slice(0, 512);
    });
    socket.on('close', () => {
      this.relays.delete(stream);
      this.link.send({ t: 'tcp.closed', stream, error: relay.error });
    });
  }

  private maybeResume(relay: Relay): void {
    if (relay.credit > 0 && !relay.linkBlocked && relay.socket.isPaused()) relay.socket.resume();
  }
}
