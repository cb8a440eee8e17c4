/**
 * The computer's side of egress: per generation, the guest's relay port is opened and every
 * connection a program makes there is handed to the host's EgressProxy (src/net/egress), with
 * the job or terminal that made it known from the proxy credentials in its environment. The
 * sandbox has no other way out: its network namespace holds only lo.
 */
import { existsSync, readFileSync } from 'node:fs';
import type { AuditStore } from '../audit/types.js';
import type { ProfileConfig } from '../config/computer-schema.js';
import { EGRESS_STREAM_BASE } from '../guest/egress-relay.js';
import { compileNetworkAllow, type EgressScope } from '../net/egress/decide.js';
import type { InjectRules } from '../net/egress/inject.js';
import { EgressProxy } from '../net/egress/proxy.js';
import type { TerminatingCa } from '../net/egress/tls-ca.js';
import type { EgressLimits, EgressPrincipal, EgressSession } from '../net/egress/types.js';
import type { HostResolver, Sandbox } from '../policy/types.js';
import { randomId } from '../shared/ids.js';
import { principalKey } from '../shared/principal.js';
import type { CallerContext } from '../tools/tool.js';
import type { Computer } from './computer.js';
import type { GuestClient } from './link/guest-client.js';
import { GUEST_CA_BUNDLE, GUEST_EGRESS_CA, GUEST_EGRESS_PORT } from './link/guest-layout.js';
import { GuestSocket, RELAY_WINDOW_BYTES, RelayedSockets } from './link/guest-socket.js';
import type { StreamEvent } from './link/stream-router.js';
import type { ComputerLog } from './logs.js';

/** Who started a job: the caller of its run_command and that invocation's id. */
export interface JobLineage {
  caller: CallerContext;
  parentId: string;
}

/** What egress of every computer of this server is made of (wired by main.ts). */
export interface EgressServiceOptions {
  policy: Sandbox;
  dns: HostResolver;
  audit: AuditStore;
  limits: EgressLimits;
  inject?: InjectRules;
  ca?: TerminatingCa;
  /** Roots the proxy trusts upstream for terminated domains (default: the system's). */
  upstreamCa?: string[];
  env?: NodeJS.ProcessEnv;
}

/** Makes the egress of each generation whose profile asks for the proxy. */
export class EgressService {
  private readonly bundle: string | null;

  constructor(readonly options: EgressServiceOptions) {
    const system = existsSync(GUEST_CA_BUNDLE) ? readFileSync(GUEST_CA_BUNDLE, 'utf8') : '';
    this.bundle = options.ca ? `${system.trimEnd()}\n${options.ca.certPem.trim()}\n` : null;
  }

  /** Validates a profile's network.allow (throws INVALID_ARGUMENT naming a bad rule). */
  static checkProfile(profile: ProfileConfig): void {
    compileNetworkAllow(profile.network.allow);
  }

  /** The egress of generation `generation`, or null when its profile has no network. */
  forComputer(generation: number, profile: ProfileConfig, log: ComputerLog): ComputerEgress | null {
    if (profile.network.mode !== 'proxy') return null;
    return new ComputerEgress(this, generation, profile, log);
  }

  /** Files the guest sees: the trust bundle with the egress CA (only when TLS is terminated). */
  guestFiles(): Record<string, string> {
    if (!this.bundle || !this.options.ca) return {};
    return { [GUEST_CA_BUNDLE]: this.bundle, [GUEST_EGRESS_CA]: this.options.ca.certPem };
  }
}

/** One generation's egress: the relay's channels, the proxy credentials, the proxy. */
export class ComputerEgress extends RelayedSockets implements EgressSession {
  private readonly proxy: EgressProxy;
  private readonly principals = new Map<string, { password: string; principal: EgressPrincipal }>();
  private readonly narrow: Sandbox | null;
  private computer: Computer | null = null;
  readonly limits: EgressLimits;
  readonly audit: AuditStore;
  readonly inject?: InjectRules;
  readonly ca?: TerminatingCa;
  readonly upstreamCa?: string[];

  constructor(
    private readonly service: EgressService,
    private readonly generation: number,
    private readonly profile: ProfileConfig,
    private readonly log: ComputerLog,
  ) {
    super();
    const o = service.options;
    this.limits = o.limits;
    this.audit = o.audit;
    if (o.inject) this.inject = o.inject;
    if (o.ca) this.ca = o.ca;
    if (o.upstreamCa) this.upstreamCa = o.upstreamCa;
    this.narrow = compileNetworkAllow(profile.network.allow);
    this.proxy = new EgressProxy(this, o.env ?? process.env);
  }

  /** Opens the guest's relay port (during boot, before any job runs). */
  async start(computer: Computer, client: GuestClient): Promise<void> {
    this.computer = computer;
    computer.streams.attach(this);
    await client.call('egress.listen', { port: GUEST_EGRESS_PORT, windowBytes: RELAY_WINDOW_BYTES });
  }

  /** Files the guest sees (the trust bundle). */
  guestFiles(): Record<string, string> {
    return this.service.guestFiles();
  }

  /**
   * The proxy variables of one job or terminal (`id`), with credentials that name it: the proxy
   * attributes each connection to it and decides with its caller's policy.
   */
  env(id: string, lineage?: JobLineage): Record<string, string> {
    const password = randomId('', 18);
    const caller = lineage?.caller;
    const scope: EgressScope = {
      policy: caller?.policy ?? this.service.options.policy,
      narrow: this.narrow,
      profileId: this.profile.id,
      dns: this.service.options.dns,
    };
    this.principals.set(id, {
      password,
      principal: {
        caller: caller?.caller ?? `computer:g${this.generation}`,
        ...(caller ? { principal: principalKey(caller.principal) } : {}),
        via: caller?.via ?? 'direct',
        ...(lineage ? { parentId: lineage.parentId } : {}),
        jobId: id,
        generation: this.generation,
        scope,
      },
    });
    const auth = `${id}:${password}@127.0.0.1:${GUEST_EGRESS_PORT}`;
    const http = `http://${auth}`;
    const env: Record<string, string> = {
      HTTP_PROXY: http,
      HTTPS_PROXY: http,
      ALL_PROXY: `socks5h://${auth}`,
      NO_PROXY: 'localhost,127.0.0.1,::1',
      // Node ≥ 22.21 / 24 honour the variables in fetch with this; Node 20 ignores it (docs/computer.md)
      NODE_USE_ENV_PROXY: '1',
    };
    for (const [k, v] of Object.entries(env)) env[k.toLowerCase()] = v;
    delete env.node_use_env_proxy;
    if (this.ca) {
      Object.assign(env, {
        SSL_CERT_FILE: GUEST_CA_BUNDLE,
        CURL_CA_BUNDLE: GUEST_CA_BUNDLE,
        REQUESTS_CA_BUNDLE: GUEST_CA_BUNDLE,
        PIP_CERT: GUEST_CA_BUNDLE,
        GIT_SSL_CAINFO: GUEST_CA_BUNDLE,
        NODE_EXTRA_CA_CERTS: GUEST_EGRESS_CA,
      });
    }
    return env;
  }

  /**
   * Withdraws the proxy credentials of one job (its caller was revoked): its next connection or
   * proxied request is refused as unauthenticated. Whether there were any.
   */
  revoke(id: string): boolean {
    return this.principals.delete(id);
  }

  principal(credentials: { user: string; password: string } | null): EgressPrincipal | null {
    if (!credentials) return null;
    const entry = this.principals.get(credentials.user);
    return entry && entry.password === credentials.password ? entry.principal : null;
  }

  onRefused(principal: EgressPrincipal | null, message: string): void {
    this.log.add('warn', 'egress.denied', message, {
      generation: this.generation,
      ...(principal?.jobId ? { jobId: principal.jobId } : {}),
    });
  }

  /** Connections open right now (tests and status). */
  get openConnections(): number {
    return this.proxy.openConnections;
  }

  owns(stream: number): boolean {
    return stream >= EGRESS_STREAM_BASE;
  }

  override onEvent(event: StreamEvent): void {
    if (event.t !== 'egress.open') {
      super.onEvent(event);
      return;
    }
    const computer = this.computer;
    if (!computer || this.sockets.has(event.stream)) return;
    const socket = new GuestSocket(computer, event.stream, () => this.sockets.delete(event.stream));
    this.sockets.set(event.stream, socket);
    this.proxy.handle(socket);
  }

  override onClose(reason: string): void {
    super.onClose(reason);
    this.principals.clear();
  }
}
