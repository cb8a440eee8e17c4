/**
 * The egress decision: may a computer open a TCP connection to host:port? Decided as the
 * policy's `tcp` action (the very rules of http_get for 80/443, `policy.tcp.allow` for any
 * port, the private-address guard, the static host map), narrowed by the profile's
 * `network.allow` and, for an agent's computer, by the caller's own policy (which is the Sandbox
 * passed in). What `policy.http.ask` covers waits for a person when one can be asked. The
 * answer carries the addresses the check vetted: the proxy connects to one of those and nothing
 * else (no rebinding).
 */
import { policySchema } from '../../config/schema.js';
import type { Grant, HostResolver, PolicyAction, Sandbox } from '../../policy/types.js';
import { createWhitelistSandbox } from '../../policy/whitelist-sandbox.js';
import { isPaddockError } from '../../shared/errors.js';

/** Where a connection wants to go, as the program named it (a name or an IP literal). */
export interface EgressTarget {
  host: string;
  port: number;
}

/** A person's answer to an ask: a grant to decide with, or a refusal naming why. */
export type AskAnswer = { allow: true; grant: Grant } | { allow: false; rule: string; reason: string };

/** What decides one computer's connections. */
export interface EgressScope {
  /** The server's policy, or the caller's narrowed one (an agent's). */
  policy: Sandbox;
  /** The profile's `network.allow` as a whitelist, when the profile narrows. */
  narrow: Sandbox | null;
  /** Name of the profile (for messages). */
  profileId: string;
  dns: HostResolver;
  /** Destinations a person allowed (for this computer, or always). */
  grants?: () => readonly Grant[];
  /**
   * Asks a person about a destination `policy.http.ask` covers (`rule`: the ask entry); the
   * connection waits for the answer. Absent: nobody may be asked (an agent's narrowed policy).
   */
  ask?: (target: EgressTarget, rule: string, signal: AbortSignal) => Promise<AskAnswer>;
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
  | {
      allow: false;
      rule: string;
      reason: string;
      code: EgressRefusal;
      message: string;
      /** What to change to allow it (policy refusals). */
      hint?: string;
    };

/** Builds the `network.allow` narrowing of a profile; throws INVALID_ARGUMENT naming a bad rule. */
export function compileNetworkAllow(allow: readonly string[] | undefined): Sandbox | null {
  if (allow === undefined) return null;
  return createWhitelistSandbox(policySchema.parse({ http: { allow: [...allow] } }));
}

/** The `tcp` action a connection is decided as. */
export function egressAction(target: EgressTarget): PolicyAction {
  return { type: 'tcp', host: target.host, port: target.port };
}

function denied(
  rule: string,
  reason: string,
  code: EgressRefusal,
  message: string,
): Extract<EgressDecision, { allow: false }> {
  return { allow: false, rule, reason, code, message };
}

/** How `target` is written in a rule: the bare host for 80/443, `host:port` otherwise. */
function ruleEntry(target: EgressTarget): string {
  return target.port === 80 || target.port === 443 ? target.host : `${target.host}:${target.port}`;
}

/**
 * What an operator changes to allow `target`, for the program's error message. `http`: the
 * connection is known to speak HTTP (a proxy request or CONNECT), so an http.allow entry is
 * the rule to add whatever the port.
 */
export function allowHint(
  target: EgressTarget,
  scope: Pick<EgressScope, 'profileId'>,
  rule: string,
  http = false,
): string {
  const entry = ruleEntry(target);
  if (rule.startsWith('profile:')) {
    return `add "${entry}" to network.allow of profile "${scope.profileId}"`;
  }
  if (rule.startsWith('agent:')) return `add "${entry}" to the agent's policy.http.allow (AGENT.md)`;
  if (rule.startsWith('http.deny')) return `remove the matching entry from policy.http.deny`;
  if (rule === 'forbidden-address' || rule === 'ip-literal') {
    return `name the address in policy.http.allow, or map the name to it in policy.http.hosts`;
  }
  if (rule === 'resolve') return `check that the host name exists, or map it in policy.http.hosts`;
  if (http || target.port === 80 || target.port === 443) {
    return `add "${entry}" to policy.http.allow in paddock.yaml`;
  }
  return `add "${entry}" to policy.tcp.allow in paddock.yaml`;
}

/**
 * Decides one connection (`http`: it is known to speak HTTP, which only changes the hint).
 * `gone` aborts when the program closed the connection (a question to a person ends with it).
 * Never throws: a failure to resolve is a refusal with its own code.
 */
export async function decideEgress(
  target: EgressTarget,
  scope: EgressScope,
  http = false,
  gone: AbortSignal = new AbortController().signal,
): Promise<EgressDecision> {
  const where = `${target.host}:${target.port}`;
  const action = egressAction(target);
  const lexical = scope.policy.check(action);
  if (!lexical.allow && lexical.rule === 'url-syntax') {
    return denied(
      'url-syntax',
      'the target is not a host name or IP address with a port from 1 to 65535',
      'INVALID_ARGUMENT',
      `Paddock egress: "${where.slice(0, 300)}" is not a valid destination; give host:port.`,
    );
  }
  const refuse = (rule: string, reason: string) => ({
    ...denied(rule, reason, 'POLICY_DENIED', refusalMessage(target, scope, rule, reason, http)),
    hint: allowHint(target, scope, rule, http),
  });
  const narrowed = () => {
    if (!scope.narrow) return null;
    const verdict = scope.narrow.check(action);
    if (verdict.allow) return null;
    return refuse(
      `profile:${verdict.rule}`,
      `${where} is not in network.allow of profile "${scope.profileId}"`,
    );
  };
  const enforce = async (grants: readonly Grant[]): Promise<EgressDecision> => {
    const decision = await scope.policy.enforce(action, { dns: scope.dns, grants });
    return (
      narrowed() ?? {
        allow: true,
        rule: decision.rule,
        reason: decision.reason,
        addresses: decision.addresses ?? [],
      }
    );
  };
  const grants = scope.grants?.() ?? [];
  try {
    try {
      return await enforce(grants);
    } catch (e) {
      if (!isPaddockError(e) || e.code !== 'POLICY_DENIED' || e.details.ask !== true) throw e;
      const rule = String(e.details.rule);
      if (!scope.ask) {
        return refuse(
          rule,
          `${where} needs a person's answer (${rule}), and this caller's connections are never asked about`,
        );
      }
      const narrowRefusal = narrowed();
      if (narrowRefusal) return narrowRefusal;
      const answer = await scope.ask(target, rule, gone);
      if (!answer.allow) return refuse(answer.rule, answer.reason);
      return await enforce([...grants, answer.grant]);
    }
  } catch (e) {
    if (isPaddockError(e) && e.code === 'POLICY_DENIED') {
      const rule = String(e.details.rule ?? 'default-deny');
      const reason = String(e.details.reason ?? e.message);
      return refuse(rule, reason);
    }
    const code = isPaddockError(e) && e.code === 'TIMEOUT' ? 'TIMEOUT' : 'UPSTREAM_ERROR';
    const text = e instanceof Error ? e.message : String(e);
    return {
      ...denied('resolve', text, code, `Paddock egress: ${text}`),
      hint: allowHint(target, scope, 'resolve'),
    };
  }
}

/** The one-line message a refused program gets: what was refused, by which rule, what to change. */
export function refusalMessage(
  target: EgressTarget,
  scope: Pick<EgressScope, 'profileId'>,
  rule: string,
  reason: string,
  http = false,
): string {
  return `Paddock egress refused ${target.host}:${target.port} (rule ${rule}): ${reason}. To allow it, ${allowHint(target, scope, rule, http)}.`;
}

/**
 * Aborts when the program's side of `socket` is gone (`close`, or `hangup` from a relayed socket
 * whose readable side is paused): a decision that waits for a person ends with the connection.
 */
export function closeSignal(socket: { once(event: string, listener: () => void): unknown }): AbortSignal {
  const controller = new AbortController();
  const abort = () => controller.abort();
  socket.once('close', abort);
  socket.once('hangup', abort);
  return controller.signal;
}
