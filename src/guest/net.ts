/**
 * The computer's view of the network, served by the agent: the resolver on lo and, with
 * network, the listeners of every handed-out name, whose connections go to the host through
 * the egress relay. Set up once per computer by the host (`net.listen`), widened when the
 * policy allows more ports (`net.ports`).
 */
import { GuestResolver } from './dns-server.js';
import type { EgressRelay } from './egress-relay.js';
import { errnoOf, GuestFailure } from './failure.js';
import type { GuestLink } from './link.js';
import { NameTable } from './name-table.js';
import type { CallArgs } from './protocol.js';

export class GuestNetwork {
  private resolver: GuestResolver | null = null;
  private table: NameTable | null = null;

  constructor(
    private readonly link: GuestLink,
    private readonly egress: EgressRelay,
  ) {}

  /** Starts the resolver (and the name listeners); fails when port 53 cannot be bound. */
  async listen(args: CallArgs<'net.listen'>): Promise<Record<string, never>> {
    if (this.resolver) throw new GuestFailure('INVALID_ARGUMENT', 'The resolver already runs.');
    const { names, windowBytes } = args;
    if (names) {
      this.table = new NameTable(
        names.ports,
        (socket, target) => this.egress.transparent(socket, target, windowBytes),
        (message) => this.link.log('warn', `egress: ${message}`),
      );
    }
    const resolver = new GuestResolver(
      args.resolver,
      this.table
        ? { kind: 'names', table: this.table }
        : {
            kind: 'offline',
            onLookup: (name, origin) => this.link.send({ t: 'net.offline', name, origin }),
          },
    );
    try {
      await resolver.listen();
    } catch (e) {
      this.table?.close();
      this.table = null;
      throw new GuestFailure(
        'UNSUPPORTED_CAPABILITY',
        `The computer's resolver cannot listen on ${args.resolver}:53 (${errnoOf(e) ?? String(e)}).`,
      );
    }
    this.resolver = resolver;
    return {};
  }

  /** Listens on more ports for every name (a reloaded policy). */
  async setPorts(args: CallArgs<'net.ports'>): Promise<Record<string, never>> {
    await this.table?.setPorts(args.ports);
    return {};
  }

  close(): void {
    this.resolver?.close();
    this.table?.close();
  }
}
