/**
 * Guest streams that are not jobs — terminals and relayed preview connections — routed to
 * their owners. Jobs use stream numbers below TERMINAL_STREAM_BASE; each owner takes one
 * range, so a frame's stream alone says where it goes. One router per generation: when the
 * generation ends, every owner hears it once.
 */

import type { GuestEvent } from '../../guest/protocol.js';
import type { Disposable } from '../../shared/disposable.js';

export type { Disposable };

/** First stream of terminals (PTYs): `TERMINAL_STREAM_BASE + n` for terminal `g<gen>.term<n>`. */
export const TERMINAL_STREAM_BASE = 0x4000_0000;
/** First stream of relayed TCP connections (the preview). */
export const RELAY_STREAM_BASE = 0x8000_0000;
/** Channels in each range. */
export const STREAM_RANGE = 0x4000_0000;

/** Guest events about a terminal or a relayed connection. */
export type StreamEvent = Extract<GuestEvent, { t: 'pty.exit' | 'tcp.closed' | 'egress.open' }>;

/** Something that owns a range of streams of one generation. */
export interface StreamOwner {
  /** Whether `stream` belongs to this owner. */
  owns(stream: number): boolean;
  /** Bytes of a stream; `payload` is valid only during the call (copy what is kept). */
  onData(stream: number, fd: number, payload: Buffer): void;
  onEnd(stream: number, fd: number): void;
  /** Credit the guest granted (relayed connections). */
  onWindow(stream: number, fd: number, bytes: number): void;
  onEvent(event: StreamEvent): void;
  /** The generation ended (relaunch, error or shutdown): every stream is gone. */
  onClose(reason: string): void;
}

/** Routes the frames and events of non-job streams of one generation. */
export class StreamRouter {
  private readonly owners = new Set<StreamOwner>();
  private closedWith: string | null = null;

  /** Adds an owner; if the generation already ended it hears so at once. */
  attach(owner: StreamOwner): Disposable {
    if (this.closedWith !== null) {
      owner.onClose(this.closedWith);
      return { dispose: () => undefined };
    }
    this.owners.add(owner);
    return { dispose: () => this.owners.delete(owner) };
  }

  /** Whether the generation ended. */
  get closed(): boolean {
    return this.closedWith !== null;
  }

  /** Delivers stream bytes; false when no owner takes the stream (it is a job's). */
  data(stream: number, fd: number, payload: Buffer): boolean {
    const owner = this.find(stream);
    owner?.onData(stream, fd, payload);
    return owner !== undefined;
  }

  /** Delivers an end of stream; false when no owner takes the stream. */
  end(stream: number, fd: number): boolean {
    const owner = this.find(stream);
    owner?.onEnd(stream, fd);
    return owner !== undefined;
  }

  window(stream: number, fd: number, bytes: number): void {
    this.find(stream)?.onWindow(stream, fd, bytes);
  }

  /** Delivers a terminal or relay event; other events are ignored. */
  event(event: GuestEvent): void {
    if (event.t !== 'pty.exit' && event.t !== 'tcp.closed' && event.t !== 'egress.open') return;
    this.find(event.stream)?.onEvent(event);
  }

  /** Tells every owner that the generation ended (once). */
  close(reason: string): void {
    if (this.closedWith !== null) return;
    this.closedWith = reason;
    const owners = [...this.owners];
    this.owners.clear();
    for (const owner of owners) owner.onClose(reason);
  }

  private find(stream: number): StreamOwner | undefined {
    if (stream < TERMINAL_STREAM_BASE) return undefined;
    for (const owner of this.owners) if (owner.owns(stream)) return owner;
    return undefined;
  }
}
