/**
 * The names the computer's resolver handed out: each host name a program looks up gets an
 * address of its own in 127.77.0.0/16 (every 127/8 address is on lo, so no route is needed),
 * and the agent listens on that address for the ports the policy could allow before the answer
 * leaves. A connection to one of them is for that name and port, whatever the program sends:
 * it is handed to the host like a proxy connection, with the name, the port and who made it.
 *
 * An address is bound before it is answered, so a program that listens on an address first
 * (to catch another's connections) only makes the agent pick another; a name keeps its address
 * for the computer's life, so a cached answer never points at something else later.
 */
import { createServer, type Server, type Socket } from 'node:net';
import { errnoOf } from './failure.js';

/** Names one computer may have at once (each holds a listener per port). */
export const MAX_NAMES = 2048;
/** Tries to find an address whose ports are all free before settling for fewer ports. */
const ADDRESS_TRIES = 8;

interface Entry {
  name: string;
  address: string;
  servers: Map<number, Server>;
}

/** A connection to a handed-out name and port. */
export type NameConnection = (socket: Socket, target: { host: string; port: number }) => void;

export class NameTable {
  private readonly byName = new Map<string, Entry>();
  private readonly byAddress = new Map<string, Entry>();
  private readonly pending = new Map<string, Promise<string | null>>();
  private ports: number[];
  /** Ports already reported as taken by a program listening on every address. */
  private readonly reported = new Set<number>();

  constructor(
    ports: readonly number[],
    private readonly onConnection: NameConnection,
    private readonly warn: (message: string) => void,
    private readonly random: () => number = Math.random,
  ) {
    this.ports = [...new Set(ports)];
  }

  /** The name behind a handed-out address (reverse lookups), if any. */
  nameOf(address: string): string | null {
    return this.byAddress.get(address)?.name ?? null;
  }

  /** Names handed out so far. */
  get size(): number {
    return this.byName.size;
  }

  /**
   * The address of `name`, binding its listeners first when it is new; null when the table is
   * full or no address could be bound.
   */
  addressOf(name: string): Promise<string | null> {
    const known = this.byName.get(name);
    if (known) return Promise.resolve(known.address);
    const waiting = this.pending.get(name);
    if (waiting) return waiting;
    if (this.byName.size + this.pending.size >= MAX_NAMES) return Promise.resolve(null);
    const allocation = this.allocate(name).finally(() => this.pending.delete(name));
    this.pending.set(name, allocation);
    return allocation;
  }

  /** Adds listeners for ports a new policy allows (ports are only added while names live). */
  async setPorts(ports: readonly number[]): Promise<void> {
    const added = ports.filter((p) => !this.ports.includes(p));
    this.ports = [...this.ports, ...added];
    for (const entry of this.byName.values()) {
      for (const port of added) {
        const server = await this.bind(entry.name, entry.address, port).catch((e: unknown) => {
          this.warn(`could not listen for ${entry.name}:${port} (${errnoOf(e) ?? String(e)})`);
          return null;
        });
        if (server) entry.servers.set(port, server);
      }
    }
  }

  /** Closes every listener (the agent is shutting down). */
  close(): void {
    for (const entry of this.byName.values()) for (const server of entry.servers.values()) server.close();
  }

  private async allocate(name: string): Promise<string | null> {
    const closeAll = (servers: Map<number, Server>) => {
      for (const server of servers.values()) server.close();
    };
    let best: { address: string; servers: Map<number, Server> } | null = null;
    for (let attempt = 0; attempt < ADDRESS_TRIES; attempt++) {
      const address = this.freeAddress();
      if (!address) return null;
      const { servers, failed } = await this.bindAll(name, address);
      if (failed.length === 0 || !best || servers.size > best.servers.size) {
        if (best) closeAll(best.servers);
        best = { address, servers };
      } else {
        closeAll(servers);
      }
      if (failed.length === 0) break;
    }
    if (!best || best.servers.size === 0) return null;
    const missing = this.ports.filter((p) => !best.servers.has(p) && !this.reported.has(p));
    for (const port of missing) {
      this.reported.add(port);
      this.warn(
        `port ${port} of handed-out names is taken (a program listens on it on every address); connections to names on that port do not reach egress`,
      );
    }
    const entry: Entry = { name, address: best.address, servers: best.servers };
    this.byName.set(name, entry);
    this.byAddress.set(best.address, entry);
    return best.address;
  }

  private freeAddress(): string | null {
    for (let i = 0; i < 64; i++) {
      const n = Math.floor(this.random() * 65_534) + 1; // 127.77.0.1 … 127.77.255.254
      const address = `127.77.${n >> 8}.${n & 0xff}`;
      if ((n & 0xff) !== 0 && (n & 0xff) !== 255 && !this.byAddress.has(address)) return address;
    }
    return null;
  }

  private async bindAll(
    name: string,
    address: string,
  ): Promise<{ servers: Map<number, Server>; failed: number[] }> {
    const servers = new Map<number, Server>();
    const failed: number[] = [];
    await Promise.all(
      this.ports.map(async (port) => {
        try {
          servers.set(port, await this.bind(name, address, port));
        } catch {
          failed.push(port);
        }
      }),
    );
    return { servers, failed };
  }

  private bind(name: string, address: string, port: number): Promise<Server> {
    return new Promise((resolve, reject) => {
      const server = createServer({ allowHalfOpen: true, pauseOnConnect: true }, (socket) =>
        this.onConnection(socket, { host: name, port }),
      );
      server.once('error', reject);
      server.listen({ host: address, port, exclusive: true, backlog: 128 }, () => {
        server.off('error', reject);
        server.on('error', () => undefined);
        resolve(server);
      });
    });
  }
}
