/**
 * What the egress of a computer is made of and talks to: the service's parts (wired by
 * main.ts), the lineage of a job's connections, and the questions to a person with their answers.
 */
import type { AuditStore } from '../../audit/types.js';
import type { EgressTarget } from '../../net/egress/decide.js';
import type { InjectRules } from '../../net/egress/inject.js';
import type { TerminatingCa } from '../../net/egress/tls-ca.js';
import type { EgressLimits, EgressPrincipal } from '../../net/egress/types.js';
import type { Grant, HostResolver, Sandbox } from '../../policy/types.js';
import type { CallerContext } from '../../tools/tool.js';

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
  /**
   * Ports a computer's handed-out names listen on (the ports the policy could allow, see
   * policy/ports.ts); read at each computer's start and when the policy changes.
   */
  ports?: () => readonly number[];
  /** Asks a person about destinations `policy.http.ask` covers (absent: nobody is asked). */
  asker?: EgressAsker;
}

/** Asking a person about a destination, and the standing answers (see egress-ask.ts). */
export interface EgressAsker {
  /** Destinations allowed "always", for every computer. */
  always(): readonly Grant[];
  /** Asks about `target` for the computer `computer`; resolves with the answer. */
  ask(question: EgressQuestion): Promise<EgressAnswer>;
}

/** One question to a person. */
export interface EgressQuestion {
  target: EgressTarget;
  /** The `policy.http.ask` entry that covers it. */
  rule: string;
  /** Aborts when the program gave up the connection: the question ends with it. */
  gone: AbortSignal;
  principal: EgressPrincipal;
  /** The computer's name and generation, as the person sees them. */
  computer: string;
  generation: number;
}

/** A person's answer: allow this connection, this computer's, every computer's, or refuse. */
export type EgressAnswer =
  | { allow: true; scope: 'once' | 'computer' | 'always'; label: string }
  | { allow: false; rule: string; reason: string };
