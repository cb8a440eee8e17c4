/**
 * The egress proxy of one computer. Every connection the guest relays arrives here as a duplex
 * stream; its first byte says what it speaks: 0x05 is SOCKS5 (socks5h://, names resolved here),
 * anything else HTTP (absolute-URI requests of a forward proxy, and CONNECT for TLS). Each
 * connection is decided on the host, on the address actually connected, and written as one
 * audit row. Connections at once, new connections per second and idle time are bounded.
 */
import { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { ConnectionRecord } from './connection-log.js';
import type { EgressTarget } from './decide.js';
import { HttpProxy } from './http-proxy.js';
import { plainResponse } from './proxy-answers.js';
import { handleSocks } from './socks5.js';
import { TransparentEgress } from './transparent.js';
import type { EgressPrincipal, EgressSession } from './types.js';

/** Handles the connections of one computer. */
export class EgressProxy {
  private readonly http: HttpProxy;
  private readonly transparent: TransparentEgress;
  private active = 0;
  private tokens: number;
  private refilledAt = performance.now();
  /** Connections refused for the limits since the last logged one (the log stays readable under a flood). */
  private suppressed = 0;

  constructor(
    readonly session: EgressSession,
    private readonly env: NodeJS.ProcessEnv = process.env,
  ) {
    this.tokens = session.limits.connectionsPerSecond;
    this.http = new HttpProxy(session, env);
    this.transparent = new TransparentEgress(session, this.http);
  }

  /** Connections open right now. */
  get openConnections(): number {
    return this.active;
  }

  /**
   * Takes one connection to a name the computer's resolver handed out (`target`), made by
   * `principal` (the job the guest found behind it, or the computer itself).
   */
  handleNamed(socket: Duplex, target: EgressTarget, principal: EgressPrincipal): void {
    socket.on('error', () => socket.destroy());
    if (socket instanceof Socket) socket.setNoDelay(true);
    const refused = this.overLimit();
    if (refused) {
      const record = new ConnectionRecord(this.session, 'tcp', principal, target.host, target.port);
      this.refuseForLimit(socket, refused, record);
      return;
    }
    this.admit(socket);
    this.transparent.handle(socket, target, principal);
  }

  /** Takes one connection from the computer. */
  handle(socket: Duplex): void {
    socket.on('error', () => socket.destroy());
    // answers go out as several small writes; Nagle would hold each back for an ACK
    if (socket instanceof Socket) socket.setNoDelay(true);
    const refused = this.overLimit();
    if (refused) {
      this.refuseForLimit(socket, refused);
      return;
    }
    this.admit(socket);
    const headTimer = setTimeout(() => socket.destroy(), this.session.limits.headTimeoutMs);
    headTimer.unref();
    socket.once('close', () => clearTimeout(headTimer));
    const first = (chunk: Buffer) => {
      clearTimeout(headTimer);
      socket.pause();
      socket.unshift(chunk);
      if (chunk[0] === 0x05) void handleSocks(socket, this.session);
      else this.http.accept(socket);
      socket.resume();
    };
    socket.once('data', first);
  }

  /** Counts an open connection until it closes. */
  private admit(socket: Duplex): void {
    this.active += 1;
    let released = false;
    socket.once('close', () => {
      if (released) return;
      released = true;
      this.active -= 1;
    });
  }

  private overLimit(): string | null {
    const { maxConnections, connectionsPerSecond } = this.session.limits;
    const now = performance.now();
    const elapsed = (now - this.refilledAt) / 1000;
    this.tokens = Math.min(connectionsPerSecond, this.tokens + elapsed * connectionsPerSecond);
    this.refilledAt = now;
    if (this.active >= maxConnections) {
      return `${maxConnections} connections of this computer are already open; close some and retry`;
    }
    if (this.tokens < 1) {
      return `more than ${connectionsPerSecond} new connections per second; slow down and retry`;
    }
    this.tokens -= 1;
    return null;
  }

  /** Refuses at once (HTTP 503 or a SOCKS failure, whichever the program speaks) and audits it. */
  private refuseForLimit(
    socket: Duplex,
    reason: string,
    record = new ConnectionRecord(this.session, 'connect', null, '', 0),
  ): void {
    const message = `Paddock egress refused a connection: ${reason}.`;
    record.finish({
      success: false,
      rule: 'egress-limit',
      errorCode: 'LIMIT_EXCEEDED',
      errorMessage: message,
    });
    this.suppressed += 1;
    if (this.suppressed === 1 || this.suppressed % 1000 === 0) {
      this.session.onRefused(null, `${message} (${this.suppressed} refused so far)`);
    }
    socket.once('data', (chunk: Buffer) => {
      if (chunk[0] === 0x05) socket.end(Buffer.from([0x05, 0xff]));
      else socket.end(plainResponse(503, message));
    });
    setTimeout(() => socket.destroy(), 1000).unref();
  }
}
