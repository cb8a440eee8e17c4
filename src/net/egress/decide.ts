/**
 * The egress decision: may a computer open a TCP connection to host:port? Decided by the very
 * `policy.http` rules of http_get (the whitelist Sandbox, its private-address guard and its
 * static host map), narrowed by the profile's `network.allow` and, for an agent's computer, by
 * the caller's own policy (which is the Sandbox passed in). The answer carries the addresses the
 * check vetted: the proxy connects to one of those and nothing else (no rebinding).
 */
import { policySchema } from '../../config/schema.js';
import type { HostResolver, PolicyAction, Sandbox } from '../../policy/types.js';
import { createWhitelistSandbox } from '../../policy/whitelist-sandbox.js';
import { isPaddockError } from '../../shared/errors.js';

/** Where a connection wants to go, as the program named it (a name or an IP literal). */
export interface EgressTarget {
  host: string;
  port: number;
}

/** What decides one computer's connections. */
export interface EgressScope {
  /** The server's policy, or the caller's narrowed one (an agent's). */
  policy: Sandbox;
  /** The profile's `network.allow` as a whitelist, when the profile narrows. */
  narrow: Sandbox | null;
  /** Name of the profile (for messages). */
  profileId: string;
  dns: HostResolver;
}

/** Why a connection is refused, as the program and the audit row see it. */
export type EgressRefusal =
  | 'POLICY_DENIED'
  | 'UPSTREAM_ERROR'
  | 'TIMEOUT'
  | 'INVALID_ARGUMENT'
  | 'LIMIT_EXCEEDED';

export type EgressDecision =
  | { allow: true; rule: string; reason: string; addresses: string[] }
  | { allow: false; rule: string; reason: string; code: EgressRefusal; message: string };

/** Builds the `network.allow` narrowing of a profile; throws INVALID_ARGUMENT naming a bad rule. */
export function compileNetworkAllow(allow: readonly string[] | undefined): Sandbox | null {
  if (allow === undefined) return null;
  return createWhitelistSandbox(policySchema.parse({ http: { allow: [...allow] } }));
}

/**
 * The `http` action a connection is checked as: port 80 is plain http, anything else https, so
 * a rule without a port allows exactly 80 and 443 and any other port needs a rule naming it.
 */
export function egressAction(target: EgressTarget): PolicyAction | null {
  const { host, port } = target;
  if (!Number.isInteger(port) || port < 1 || port > 65535) return null;
  if (host.length === 0 || host.length > 255 || /[\s/?#@\\[\]%]/.test(host.replace(/^\[|\]$/g, ''))) {
    return null;
  }
  const bare = host.replace(/^\[|\]$/g, '');
  const hostPart = bare.includes(':') ? `[${bare}]` : bare;
  const scheme = port === 80 ? 'http' : 'https';
  return { type: 'http', method: 'CONNECT', url: `${scheme}://${hostPart}:${port}/` };
}

function denied(
  rule: string,
  reason: string,
  code: EgressRefusal,
  message: string,
): Extract<EgressDecision, { allow: false }> {
  return { allow: false, rule, reason, code, message };
}

/** What an operator changes to allow `target`, for the program's error message. */
export function allowHint(target: EgressTarget, scope: EgressScope, rule: string): string {
  const entry = target.port === 80 || target.port === 443 ? target.host : `${target.host}:${target.port}`;
  if (rule.startsWith('profile:')) {
    return `add "${entry}" to network.allow of profile "${scope.profileId}"`;
  }
  if (rule.startsWith('agent:')) return `add "${entry}" to the agent's policy.http.allow (AGENT.md)`;
  if (rule.startsWith('http.deny')) return `remove the matching entry from policy.http.deny`;
  if (rule === 'forbidden-address' || rule === 'ip-literal') {
    return `name the address in policy.http.allow, or map the name to it in policy.http.hosts`;
  }
  return `add "${entry}" to policy.http.allow in paddock.yaml`;
}

/** Decides one connection. Never throws: a failure to resolve is a refusal with its own code. */
export async function decideEgress(target: EgressTarget, scope: EgressScope): Promise<EgressDecision> {
  const where = `${target.host}:${target.port}`;
  const action = egressAction(target);
  if (!action) {
    return denied(
      'url-syntax',
      'the target is not a host name or IP address with a port from 1 to 65535',
      'INVALID_ARGUMENT',
      `Paddock egress: "${where.slice(0, 300)}" is not a valid destination; give host:port.`,
    );
  }
  try {
    const decision = await scope.policy.enforce(action, { dns: scope.dns });
    if (scope.narrow) {
      const narrowed = scope.narrow.check(action);
      if (!narrowed.allow) {
        const rule = `profile:${narrowed.rule}`;
        const reason = `${where} is not in network.allow of profile "${scope.profileId}"`;
        return denied(rule, reason, 'POLICY_DENIED', refusalMessage(target, scope, rule, reason));
      }
    }
    return {
      allow: true,
      rule: decision.rule,
      reason: decision.reason,
      addresses: decision.addresses ?? [],
    };
  } catch (e) {
    if (isPaddockError(e) && e.code === 'POLICY_DENIED') {
      const rule = String(e.details.rule ?? 'default-deny');
      const reason = String(e.details.reason ?? e.message);
      return denied(rule, reason, 'POLICY_DENIED', refusalMessage(target, scope, rule, reason));
    }
    const code = isPaddockError(e) && e.code === 'TIMEOUT' ? 'TIMEOUT' : 'UPSTREAM_ERROR';
    const text = e instanceof Error ? e.message : String(e);
    return denied('resolve', text, code, `Paddock egress: ${text}`);
  }
}

/** The one-line message a refused program gets: what was refused, by which rule, what to change. */
export function refusalMessage(
  target: EgressTarget,
  scope: EgressScope,
  rule: string,
  reason: string,
): string {
  return `Paddock egress refused ${target.host}:${target.port} (rule ${rule}): ${reason}. To allow it, ${allowHint(target, scope, rule)}.`;
}
