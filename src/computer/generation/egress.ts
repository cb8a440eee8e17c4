/**
 * The computer's side of egress: per generation, the guest's relay port is opened and every
 * connection a program makes there is handed to the host's EgressProxy (src/net/egress), with
 * the job or terminal that made it known from the proxy credentials in its environment. The
 * sandbox has no other way out: its network namespace holds only lo.
 */
import { existsSync, readFileSync } from 'node:fs';
import type { AuditStore } from '../../audit/types.js';
import type { ProfileConfig } from '../../config/computer-schema.js';
import { EGRESS_STREAM_BASE } from '../../guest/egress-relay.js';
import type { SocketOrigin } from '../../guest/socket-owner.js';
import { compileNetworkAllow, type EgressScope, type EgressTarget } from '../../net/egress/decide.js';
import type { InjectRules } from '../../net/egress/inject.js';
import { jksWithCertificate } from '../../net/egress/java-truststore.js';
import { EgressProxy } from '../../net/egress/proxy.js';
import type { TerminatingCa } from '../../net/egress/tls-ca.js';
import type { EgressLimits, EgressPrincipal, EgressRefused, EgressSession } from '../../net/egress/types.js';
import type { Grant, Sandbox } from '../../policy/types.js';
import { randomId } from '../../shared/ids.js';
import { principalKey } from '../../shared/principal.js';
import type { JobTable } from '../jobs/job-table.js';
import type { GuestChannel } from '../link/guest-channel.js';
import type { GuestClient } from '../link/guest-client.js';
import {
  GUEST_CA_BUNDLE,
  GUEST_EGRESS_CA,
  GUEST_EGRESS_PORT,
  GUEST_JAVA_CACERTS,
  GUEST_RESOLVER,
} from '../link/guest-layout.js';
import { EGRESS_WINDOW_BYTES, GuestSocket, RelayedSockets } from '../link/guest-socket.js';
import type { StreamEvent } from '../link/stream-router.js';
import type { ComputerLog } from '../logs.js';
import type { EgressAsker, EgressServiceOptions, JobLineage } from './egress-types.js';

/** What egress needs of its generation: the guest link, and its jobs to name who connected. */
export interface EgressGeneration extends GuestChannel {
  readonly jobs: Pick<JobTable, 'idOfFamily' | 'noteEgressRefused'>;
}
/** Ports every computer's names listen on whatever the policy says (http, https, ssh). */
export const BASE_NAME_PORTS = [80, 443, 22];

/** Makes the egress of each generation whose profile asks for the proxy. */
export class EgressService {
  private readonly bundle: string | null;
  private readonly javaStore: Uint8Array | null;
  /** The egress of every running generation (told when the policy changes). */
  private readonly live = new Set<ComputerEgress>();

  constructor(readonly options: EgressServiceOptions) {
    const system = existsSync(GUEST_CA_BUNDLE) ? readFileSync(GUEST_CA_BUNDLE, 'utf8') : '';
    this.bundle = options.ca ? `${system.trimEnd()}\n${options.ca.certPem.trim()}\n` : null;
    const java = options.ca && existsSync(GUEST_JAVA_CACERTS) ? readFileSync(GUEST_JAVA_CACERTS) : null;
    this.javaStore =
      java && options.ca ? jksWithCertificate(java, options.ca.certPem, 'paddock-egress') : null;
  }

  /** Validates a profile's network.allow (throws INVALID_ARGUMENT naming a bad rule). */
  static checkProfile(profile: ProfileConfig): void {
    compileNetworkAllow(profile.network.allow);
  }

  /** The egress of generation `generation`, or null when its profile has no network. */
  forComputer(
    generation: number,
    profile: ProfileConfig,
    log: ComputerLog,
    name?: string,
  ): ComputerEgress | null {
    if (profile.network.mode !== 'proxy') return null;
    return new ComputerEgress(this, generation, profile, log, name);
  }

  /**
   * The policy was replaced (paddock.yaml reloaded): each running computer's names listen on
   * the ports the new rules name. Decisions need nothing: each asks the policy in force.
   */
  async policyChanged(): Promise<void> {
    await Promise.all([...this.live].map((egress) => egress.policyChanged().catch(() => undefined)));
  }

  /** Tracks a running generation's egress until it closes. */
  track(egress: ComputerEgress): void {
    this.live.add(egress);
  }

  /** Forgets a generation's egress. */
  untrack(egress: ComputerEgress): void {
    this.live.delete(egress);
  }

  /** Files the guest sees: the trust bundle with the egress CA (only when TLS is terminated). */
  guestFiles(): Record<string, string | Uint8Array> {
    if (!this.bundle || !this.options.ca) return {};
    return {
      [GUEST_CA_BUNDLE]: this.bundle,
      [GUEST_EGRESS_CA]: this.options.ca.certPem,
      ...(this.javaStore ? { [GUEST_JAVA_CACERTS]: this.javaStore } : {}),
    };
  }
}

/** One generation's egress: the relay's channels, the proxy credentials, the proxy. */
export class ComputerEgress extends RelayedSockets implements EgressSession {
  private readonly proxy: EgressProxy;
  private readonly principals = new Map<string, { password: string; principal: EgressPrincipal }>();
  private readonly narrow: Sandbox | null;
  /** Destinations a person allowed for this computer. */
  private readonly grants: Grant[] = [];
  private computer: EgressGeneration | null = null;
  private client: GuestClient | null = null;
  /** Whether the computer's resolver hands out names (connections by name reach egress). */
  private named = false;
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
    private readonly name = `g${generation}`,
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

  /**
   * Opens the guest's relay port and its resolver (during boot, before any job runs). Where
   * the resolver cannot run (the agent may not bind port 53: one account for everything), the
   * computer keeps the proxy variables alone, and the log says so.
   */
  async start(computer: EgressGeneration, client: GuestClient): Promise<void> {
    this.computer = computer;
    this.client = client;
    computer.streams.attach(this);
    this.service.track(this);
    await client.call('egress.listen', { port: GUEST_EGRESS_PORT, windowBytes: EGRESS_WINDOW_BYTES });
    try {
      await client.call('net.listen', {
        resolver: GUEST_RESOLVER,
        names: { ports: this.ports() },
        windowBytes: EGRESS_WINDOW_BYTES,
      });
      this.named = true;
    } catch (e) {
      this.log.add(
        'warn',
        'egress.resolver',
        `Programs must use the proxy variables: the computer's resolver did not start (${(e as Error).message}).`,
        { generation: this.generation },
      );
    }
  }

  /** Tells the resolver about ports a changed policy allows (names listen on them from now on). */
  async policyChanged(): Promise<void> {
    if (!this.named || !this.client?.alive) return;
    await this.client.call('net.ports', { ports: this.ports() });
  }

  private ports(): number[] {
    const ports = new Set([...BASE_NAME_PORTS, ...(this.service.options.ports?.() ?? [])]);
    return [...ports].slice(0, 64);
  }

  /** Files the guest sees (the trust bundles). */
  guestFiles(): Record<string, string | Uint8Array> {
    return this.service.guestFiles();
  }

  /**
   * What decides the connections of a caller (`policy`: an agent's narrowed one, if any);
   * `who` is the principal a person is asked about.
   */
  private scope(policy: Sandbox | undefined, who: () => EgressPrincipal): EgressScope {
    const server = this.service.options.policy;
    const scope: EgressScope = {
      policy: policy ?? server,
      narrow: this.narrow,
      profileId: this.profile.id,
      dns: this.service.options.dns,
    };
    // a person's answers widen the server's policy only, never an agent's own narrowing
    if (policy !== undefined && policy !== server) return scope;
    const asker = this.service.options.asker;
    scope.grants = () => [...(asker?.always() ?? []), ...this.grants];
    if (asker) scope.ask = (target, rule, gone) => this.ask(asker, { target, rule, gone }, who());
    return scope;
  }

  private async ask(
    asker: EgressAsker,
    { target, rule, gone }: { target: EgressTarget; rule: string; gone: AbortSignal },
    principal: EgressPrincipal,
  ) {
    const answer = await asker.ask({
      target,
      rule,
      gone,
      principal,
      computer: this.name,
      generation: this.generation,
    });
    if (!answer.allow) return answer;
    const entry = `${target.host}:${target.port}`;
    const grant = { entry, label: answer.label };
    if (answer.scope === 'computer') this.grants.push(grant);
    this.log.add(
      'info',
      'egress.allowed',
      `${entry} was allowed by a person (${answer.label}, ${answer.scope}).`,
      {
        generation: this.generation,
      },
    );
    return { allow: true as const, grant };
  }

  /** The principal of connections no job or terminal claims. */
  private computerPrincipal(): EgressPrincipal {
    const principal: EgressPrincipal = {
      caller: `computer:g${this.generation}`,
      via: 'direct',
      generation: this.generation,
      scope: this.scope(this.fallbackPolicy(), () => principal),
    };
    return principal;
  }

  /**
   * The policy of connections no job claims: the narrowed policy of the computer's callers when
   * one has one (an agent's computer), else the server's.
   */
  private fallbackPolicy(): Sandbox | undefined {
    for (const { principal } of this.principals.values()) {
      if (principal.scope.policy !== this.service.options.policy) return principal.scope.policy;
    }
    return undefined;
  }

  /**
   * The proxy variables of one job or terminal (`id`), with credentials that name it: the proxy
   * attributes each connection to it and decides with its caller's policy.
   */
  env(id: string, lineage?: JobLineage): Record<string, string> {
    const password = randomId('', 18);
    const caller = lineage?.caller;
    const principal: EgressPrincipal = {
      caller: caller?.caller ?? `computer:g${this.generation}`,
      ...(caller ? { principal: principalKey(caller.principal) } : {}),
      via: caller?.via ?? 'direct',
      ...(lineage ? { parentId: lineage.parentId } : {}),
      jobId: id,
      generation: this.generation,
      scope: this.scope(caller?.policy, () => principal),
    };
    this.principals.set(id, { password, principal });
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
    if (this.ca) Object.assign(env, caBundleEnv());
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

  /**
   * Who made a connection to a handed-out name: the job or terminal whose proxy credentials
   * the process holds (checked like a proxy's), else the job whose cgroup it is in, else the
   * computer itself.
   */
  private principalOf(origin: SocketOrigin | null | undefined): EgressPrincipal {
    const byCredentials = origin?.credentials ? this.principal(origin.credentials) : null;
    if (byCredentials) return byCredentials;
    const jobId = origin?.cgroup ? this.computer?.jobs.idOfFamily(origin.cgroup) : null;
    const byFamily = jobId ? this.principals.get(jobId)?.principal : undefined;
    return byFamily ?? this.computerPrincipal();
  }

  onRefused(principal: EgressPrincipal | null, message: string, refused?: EgressRefused): void {
    this.log.add('warn', 'egress.denied', message, {
      generation: this.generation,
      ...(principal?.jobId ? { jobId: principal.jobId } : {}),
    });
    if (refused && principal?.jobId) {
      const { host, port, rule, hint } = refused;
      this.computer?.jobs.noteEgressRefused(
        principal.jobId,
        { host, port, rule },
        `paddock: egress to ${host}:${port} refused (rule ${rule}); to allow it, ${hint}.`,
      );
    }
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
    const socket = new GuestSocket(
      computer,
      event.stream,
      () => this.sockets.delete(event.stream),
      EGRESS_WINDOW_BYTES,
    );
    this.sockets.set(event.stream, socket);
    if (event.target) this.proxy.handleNamed(socket, event.target, this.principalOf(event.origin));
    else this.proxy.handle(socket);
  }

  override onClose(reason: string): void {
    super.onClose(reason);
    this.principals.clear();
    this.service.untrack(this);
  }
}

/** Where programs find the trust bundle that includes the egress CA (only when TLS is terminated). */
export function caBundleEnv(): Record<string, string> {
  return {
    SSL_CERT_FILE: GUEST_CA_BUNDLE,
    CURL_CA_BUNDLE: GUEST_CA_BUNDLE,
    REQUESTS_CA_BUNDLE: GUEST_CA_BUNDLE,
    PIP_CERT: GUEST_CA_BUNDLE,
    GIT_SSL_CAINFO: GUEST_CA_BUNDLE,
    NODE_EXTRA_CA_CERTS: GUEST_EGRESS_CA,
  };
}
