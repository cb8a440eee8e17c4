/**
 * The egress relay inside the guest: a listener on 127.0.0.1:<port> of the sandbox's only
 * interface (lo), the port every job's HTTP_PROXY / HTTPS_PROXY / ALL_PROXY names. Each
 * connection a program opens there is handed to the host over the agent's link (an
 * `egress.open` event and a channel of the TCP relay); the host's proxy decides it. Nothing here
 * looks at the bytes: the guest is not trusted with the decision.
 */
import { createServer, type Server, type Socket } from 'node:net';
import { GuestFailure } from './failure.js';
import type { GuestLink } from './link.js';
import type { CallArgs } from './protocol.js';
import { originOfConnection } from './socket-owner.js';
import type { TcpRelay } from './tcp-relay.js';

/** Channels of egress connections: the top quarter of the channel space (the guest picks them). */
export const EGRESS_STREAM_BASE = 0xc000_0000;
const EGRESS_CHANNEL_RANGE = 0x3fff_ffff;

export class EgressRelay {
  private server: Server | null = null;
  private next = 0;
  private windowBytes: number | null = null;

  constructor(
    private readonly link: GuestLink,
    private readonly relay: TcpRelay,
  ) {}

  /** Starts listening; resolves once the port is bound. */
  listen(args: CallArgs<'egress.listen'>): Promise<Record<string, never>> {
    if (this.server) {
      return Promise.reject(new GuestFailure('INVALID_ARGUMENT', 'The egress relay already listens.'));
    }
    this.windowBytes = args.windowBytes;
    const server = createServer({ allowHalfOpen: true, pauseOnConnect: true }, (socket) => {
      const stream = this.adopt(socket);
      if (stream === null) return;
      this.link.send({ t: 'egress.open', stream });
      socket.resume();
    });
    this.server = server;
    return new Promise((resolve, reject) => {
      server.once('error', (e) => {
        this.server = null;
        reject(
          new GuestFailure('INTERNAL', `The egress relay cannot listen on port ${args.port}: ${e.message}`),
        );
      });
      server.listen({ host: '127.0.0.1', port: args.port }, () => resolve({}));
    });
  }

  /**
   * Hands a connection to a handed-out name (the resolver's) to the host: its target, and who
   * made it (found before the first byte moves, while the program still holds the socket).
   */
  transparent(socket: Socket, target: { host: string; port: number }, windowBytes: number): void {
    this.windowBytes ??= windowBytes;
    const origin = originOfConnection(
      { address: socket.remoteAddress ?? '', port: socket.remotePort ?? 0 },
      { address: socket.localAddress ?? '', port: socket.localPort ?? 0 },
    );
    const stream = this.adopt(socket);
    if (stream === null) return;
    this.link.send({ t: 'egress.open', stream, target, origin });
    socket.resume();
  }

  private adopt(socket: Socket): number | null {
    this.next = (this.next + 1) % EGRESS_CHANNEL_RANGE;
    const stream = EGRESS_STREAM_BASE + this.next;
    if (!this.relay.adopt(stream, socket, this.windowBytes ?? 256 * 1024)) {
      socket.destroy();
      return null;
    }
    return stream;
  }

  close(): void {
    this.server?.close();
  }
}
