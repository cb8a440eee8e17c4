/**
 * What the egress proxy needs from its owner (one computer): who is connecting, the limits,
 * where rows go. The proxy itself knows nothing of computers: it handles duplex streams.
 */
import type { AuditStore } from '../../audit/types.js';
import type { Via } from '../../shared/via.js';
import type { EgressScope } from './decide.js';
import type { InjectRules } from './inject.js';
import type { TerminatingCa } from './tls-ca.js';

/** Who a connection acts for (a job, a terminal, or the computer itself). */
export interface EgressPrincipal {
  /** Audit caller, e.g. `mcp:abc` or `computer:g3`. */
  caller: string;
  /** The principal key of the job's caller (`owner`, `client:<id>`, `agent:<name>`); absent for a terminal. */
  principal?: string;
  via: Via;
  /** Invocation id of the `run_command` that started the job. */
  parentId?: string;
  jobId?: string;
  generation?: number;
  scope: EgressScope;
}

/** Bounds of one computer's egress. */
export interface EgressLimits {
  /** Connections open at the same time; more are refused at once. */
  maxConnections: number;
  /** New connections per second (a token bucket of this size refilled each second). */
  connectionsPerSecond: number;
  /** A connection with no bytes either way for this long is closed. */
  idleTimeoutMs: number;
  /** Longest wait for the upstream's TCP connect. */
  connectTimeoutMs: number;
  /** Longest wait for a request head from the program. */
  headTimeoutMs: number;
}

export const DEFAULT_EGRESS_LIMITS: EgressLimits = {
  maxConnections: 64,
  connectionsPerSecond: 100,
  idleTimeoutMs: 120_000,
  connectTimeoutMs: 10_000,
  headTimeoutMs: 10_000,
};

/** One computer's egress, as the proxy sees it. */
export interface EgressSession {
  /**
   * The principal behind proxy credentials (`user:password` of the proxy URL); `null`
   * credentials: a program that sent none. Returns null for credentials nobody was given.
   */
  principal(credentials: { user: string; password: string } | null): EgressPrincipal | null;
  limits: EgressLimits;
  audit: AuditStore;
  /** Headers to add for named domains (TLS is terminated for those, and only those). */
  inject?: InjectRules;
  /** The per-data-directory CA that signs the terminated domains' certificates. */
  ca?: TerminatingCa;
  /** Allowed upstream TLS roots for terminated domains (tests use their own CA). */
  upstreamCa?: string[];
  /**
   * A refusal, for the computer's log (read_logs) and the dock; `refused` names the destination
   * and rule when the policy refused it (the job that connected is told, see computer/egress.ts).
   */
  onRefused(principal: EgressPrincipal | null, message: string, refused?: EgressRefused): void;
}

/** A destination the policy refused, as a job's result lists it. */
export interface EgressRefused {
  host: string;
  port: number;
  rule: string;
  /** What to change to allow it. */
  hint: string;
}
