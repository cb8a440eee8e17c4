/**
 * Guest channels that are not jobs — terminals and relayed preview connections — routed to
 * their owners. Jobs use channel numbers below TERMINAL_CHANNEL_BASE; each owner takes one
 * range, so a frame's channel alone says where it goes. One router per generation: when the
 * generation ends, every owner hears it once.
 */

import type { GuestEvent } from '../../guest/protocol.js';
import type { Disposable } from '../../shared/disposable.js';

export type { Disposable };

/** First channel of terminals (PTYs): `TERMINAL_CHANNEL_BASE + n` for terminal `g<gen>.term<n>`. */
export const TERMINAL_CHANNEL_BASE = 0x4000_0000;
/** First channel of relayed TCP connections (the preview). */
export const RELAY_CHANNEL_BASE = 0x8000_0000;
/** Channels in each range. */
export const CHANNEL_RANGE = 0x4000_0000;

/** Guest events about a terminal or a relayed connection. */
export type ChannelEvent = Extract<GuestEvent, { t: 'pty.exit' | 'tcp.closed' | 'egress.open' }>;

/** Something that owns a range of channels of one generation. */
export interface ChannelOwner {
  /** Whether `channel` belongs to this owner. */
  owns(channel: number): boolean;
  onData(channel: number, stream: number, payload: Buffer): void;
  onEnd(channel: number, stream: number): void;
  /** Credit the guest granted (relayed connections). */
  onWindow(channel: number, stream: number, bytes: number): void;
  onEvent(event: ChannelEvent): void;
  /** The generation ended (relaunch, error or shutdown): every channel is gone. */
  onClose(reason: string): void;
}

/** Routes the frames and events of non-job channels of one generation. */
export class ChannelRouter {
  private readonly owners = new Set<ChannelOwner>();
  private closedWith: string | null = null;

  /** Adds an owner; if the generation already ended it hears so at once. */
  attach(owner: ChannelOwner): Disposable {
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

  /** Delivers stream bytes; false when no owner takes the channel (it is a job's). */
  data(channel: number, stream: number, payload: Buffer): boolean {
    const owner = this.find(channel);
    owner?.onData(channel, stream, payload);
    return owner !== undefined;
  }

  /** Delivers an end of stream; false when no owner takes the channel. */
  end(channel: number, stream: number): boolean {
    const owner = this.find(channel);
    owner?.onEnd(channel, stream);
    return owner !== undefined;
  }

  window(channel: number, stream: number, bytes: number): void {
    this.find(channel)?.onWindow(channel, stream, bytes);
  }

  /** Delivers a terminal or relay event; other events are ignored. */
  event(event: GuestEvent): void {
    if (event.t !== 'pty.exit' && event.t !== 'tcp.closed' && event.t !== 'egress.open') return;
    this.find(event.channel)?.onEvent(event);
  }

  /** Tells every owner that the generation ended (once). */
  close(reason: string): void {
    if (this.closedWith !== null) return;
    this.closedWith = reason;
    const owners = [...this.owners];
    this.owners.clear();
    for (const owner of owners) owner.onClose(reason);
  }

  private find(channel: number): ChannelOwner | undefined {
    if (channel < TERMINAL_CHANNEL_BASE) return undefined;
    for (const owner of this.owners) if (owner.owns(channel)) return owner;
    return undefined;
  }
}
