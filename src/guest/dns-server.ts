/**
 * The computer's resolver: /etc/resolv.conf names an address on lo where the agent answers
 * DNS over UDP and TCP on port 53. With network, every host name gets an address of its own
 * (name-table.ts) and connections to it reach egress by name; IPv6 (AAAA) answers are empty, so
 * programs use the IPv4 address. Without network, every lookup is refused at once (no timeout)
 * and the host is told who asked, so the job reads why.
 */
import { createSocket, type RemoteInfo, type Socket as UdpSocket } from 'node:dgram';
import { createServer, type Server, type Socket } from 'node:net';
import {
  buildResponse,
  DnsType,
  headerOf,
  isHostName,
  parseQuery,
  Rcode,
  reverseAddress,
} from './dns-wire.js';
import type { NameTable } from './name-table.js';
import { originOfInode, type SocketOrigin, socketInode } from './socket-owner.js';

/** How long a handed-out address may be cached: it never changes for the computer's life. */
const TTL_SECONDS = 300;
/** Longest a TCP client may stay silent. */
const TCP_IDLE_MS = 10_000;
/** Lookups remembered to tell the host about each (who, name) once. */
const MAX_REPORTED = 4096;

export type ResolverMode =
  | { kind: 'names'; table: NameTable }
  | { kind: 'offline'; onLookup: (name: string, origin: SocketOrigin | null) => void };

export class GuestResolver {
  private udp: UdpSocket | null = null;
  private tcp: Server | null = null;
  private readonly reported = new Set<string>();

  constructor(
    private readonly address: string,
    private readonly mode: ResolverMode,
  ) {}

  /** Binds UDP and TCP port 53 of the resolver's address; rejects with the bind error. */
  async listen(): Promise<void> {
    const udp = createSocket({ type: 'udp4' });
    await new Promise<void>((resolve, reject) => {
      udp.once('error', reject);
      udp.bind({ address: this.address, port: 53, exclusive: true }, () => {
        udp.off('error', reject);
        resolve();
      });
    });
    udp.on('error', () => undefined);
    udp.on('message', (message, rinfo) => {
      void this.answer(message, { protocol: 'udp', rinfo }).then((reply) => {
        if (reply) udp.send(reply, rinfo.port, rinfo.address);
      });
    });
    this.udp = udp;
    const tcp = createServer((socket) => this.serveTcp(socket));
    await new Promise<void>((resolve, reject) => {
      tcp.once('error', (e) => {
        udp.close();
        reject(e);
      });
      tcp.listen({ host: this.address, port: 53, exclusive: true }, () => resolve());
    });
    tcp.on('error', () => undefined);
    this.tcp = tcp;
  }

  close(): void {
    this.udp?.close();
    this.tcp?.close();
  }

  private serveTcp(socket: Socket): void {
    socket.setTimeout(TCP_IDLE_MS, () => socket.destroy());
    socket.on('error', () => socket.destroy());
    let buffered = Buffer.alloc(0);
    socket.on('data', (chunk: Buffer) => {
      buffered = Buffer.concat([buffered, chunk]);
      while (buffered.length >= 2) {
        const length = buffered.readUInt16BE(0);
        if (buffered.length < 2 + length) break;
        const message = buffered.subarray(2, 2 + length);
        buffered = buffered.subarray(2 + length);
        void this.answer(message, { protocol: 'tcp', socket }).then((reply) => {
          if (!reply || socket.destroyed) return;
          const prefix = Buffer.alloc(2);
          prefix.writeUInt16BE(reply.length, 0);
          socket.write(Buffer.concat([prefix, reply]));
        });
      }
      if (buffered.length > 66_000) socket.destroy();
    });
  }

  private async answer(
    message: Buffer,
    from: { protocol: 'udp'; rinfo: RemoteInfo } | { protocol: 'tcp'; socket: Socket },
  ): Promise<Buffer | null> {
    const query = parseQuery(message);
    if (!query) {
      const header = headerOf(message);
      return header ? buildResponse(header, Rcode.formErr) : null;
    }
    if (query.qclass !== 1) return buildResponse(query, Rcode.notImp);
    if (this.mode.kind === 'offline') {
      this.reportOffline(query.name, from);
      return buildResponse(query, Rcode.refused);
    }
    const { table } = this.mode;
    if (query.type === DnsType.PTR) {
      const address = reverseAddress(query.name);
      const name = address ? table.nameOf(address) : null;
      return name
        ? buildResponse(query, Rcode.noError, [{ type: 'PTR', name, ttl: TTL_SECONDS }])
        : buildResponse(query, Rcode.nxDomain);
    }
    if (!isHostName(query.name)) return buildResponse(query, Rcode.nxDomain);
    if (query.name === 'localhost' || query.name.endsWith('.localhost')) {
      const answers =
        query.type === DnsType.A ? [{ type: 'A' as const, address: '127.0.0.1', ttl: TTL_SECONDS }] : [];
      return buildResponse(query, Rcode.noError, answers);
    }
    if (query.type !== DnsType.A) return buildResponse(query, Rcode.noError);
    const address = await table.addressOf(query.name);
    if (!address) return buildResponse(query, Rcode.servFail);
    return buildResponse(query, Rcode.noError, [{ type: 'A', address, ttl: TTL_SECONDS }]);
  }

  /** Tells the host (once per process and name) that a lookup was refused for lack of network. */
  private reportOffline(
    name: string,
    from: { protocol: 'udp'; rinfo: RemoteInfo } | { protocol: 'tcp'; socket: Socket },
  ): void {
    if (this.mode.kind !== 'offline') return;
    const inode =
      from.protocol === 'udp'
        ? socketInode('udp', { address: from.rinfo.address, port: from.rinfo.port })
        : socketInode(
            'tcp',
            { address: from.socket.remoteAddress ?? '', port: from.socket.remotePort ?? 0 },
            { address: from.socket.localAddress ?? '', port: from.socket.localPort ?? 0 },
          );
    const origin = originOfInode(inode);
    const key = `${origin?.pid ?? 'unknown'}|${name}`;
    if (this.reported.has(key)) return;
    if (this.reported.size >= MAX_REPORTED) this.reported.clear();
    this.reported.add(key);
    this.mode.onLookup(name, origin);
  }
}
