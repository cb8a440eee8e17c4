import { PaddockError } from '../shared/errors.js';
import { allow, BUILTIN_RULES, deny } from './decision.js';
import {
  coversPort,
  findHostRule,
  type HostRule,
  type HostRules,
  type HttpTarget,
  namesHost,
} from './domain-rules.js';
import { inspectAddress } from './ip.js';
import type { StaticHosts } from './static-hosts.js';
import type { HostResolver, PolicyDecision } from './types.js';

/** A lexical http decision and, when it allows, the rule that did. */
export interface HttpDecided {
  decision: PolicyDecision;
  rule?: HostRule;
}

/**
 * Lexical decision for a parsed target: `http.deny` first (any port unless the rule names
 * one); an IP literal needs an allow rule naming that exact address; a name needs an allow
 * rule naming it (or a `*.` parent) on the requested port (the scheme's default if the rule
 * names none).
 */
export function decideHttp(rules: HostRules, target: HttpTarget): HttpDecided {
  const where = `${target.ip ? target.ip.address : target.host} port ${target.port}`;
  const denied = findHostRule(rules.deny, target, true);
  if (denied) return { decision: deny(denied.label, `${where} is denied`) };
  if (target.ip) {
    const ipRules = rules.allow.filter((r) => r.kind === 'ip');
    const named = findHostRule(ipRules, target, false);
    if (named) {
      const decision = allow(named.label, `${where} is named by the rule`, {
        addresses: [target.ip.address],
      });
      return { decision, rule: named };
    }
    const what = `${target.ip.kind} ${target.ip.address}`;
    return {
      decision: deny(
        BUILTIN_RULES.ipLiteral,
        `the host is an IP literal (${what}) that no rule names on this port`,
      ),
    };
  }
  const rule = findHostRule(rules.allow, target, false);
  if (rule) return { decision: allow(rule.label, `${where} matches the rule`), rule };
  const near = rules.allow.find((r) => namesHost(r, target.host));
  const hint = near ? `; ${near.label} covers only port ${near.port ?? 'the default (80/443)'}` : '';
  return { decision: deny(BUILTIN_RULES.defaultDeny, `${where} is not in http.allow${hint}`) };
}

/**
 * Vets the addresses a host name resolved to. Public unicast addresses pass. A forbidden one
 * (loopback, private, link-local, CGNAT, metadata, unspecified, multicast …) passes only
 * when the name was allowed by a `localhost` rule and the address is loopback, or when an
 * allow rule names that exact address (and port). An `http.deny` rule naming an address
 * refuses it. A `localhost` rule accepts loopback addresses only. `mapped` are the addresses
 * `policy.http.hosts` gives for the name: they count as named by a rule.
 */
export function vetAddresses(
  rules: HostRules,
  rule: HostRule,
  target: HttpTarget,
  found: string[],
  mapped: readonly string[] = [],
): PolicyDecision {
  const addresses: string[] = [];
  const denyIps = rules.deny.filter((r) => r.kind === 'ip');
  for (const text of found) {
    const info = inspectAddress(text);
    if (!info) {
      return deny(BUILTIN_RULES.forbiddenAddress, `the resolver returned ${JSON.stringify(text)}, not an IP`);
    }
    const at = { host: info.address, port: target.port, defaultPort: target.defaultPort };
    const denied = findHostRule(denyIps, at, true);
    if (denied) return deny(denied.label, `${target.host} resolves to ${info.address}, which is denied`);
    if (rule.kind === 'localhost') {
      if (info.range !== 'loopback') {
        return deny(
          BUILTIN_RULES.forbiddenAddress,
          `localhost resolves to ${info.address}, which is not loopback`,
        );
      }
    } else if (info.forbidden && !mapped.includes(info.address)) {
      const named = rules.allow.some(
        (r) =>
          r.kind === 'ip' && r.host === info.address && coversPort(r, target.port, target.defaultPort, false),
      );
      if (!named) {
        const why = `${target.host} resolves to ${info.address} (${info.kind})`;
        return deny(BUILTIN_RULES.forbiddenAddress, `${why}, which only a rule naming that address allows`);
      }
    }
    if (!addresses.includes(info.address)) addresses.push(info.address);
  }
  if (addresses.length === 0) {
    return deny(BUILTIN_RULES.forbiddenAddress, `${target.host} resolved to no address`);
  }
  const reason = `${target.host} port ${target.port} matches the rule and resolves to permitted addresses`;
  return allow(rule.label, reason, { addresses });
}

/**
 * Resolves a name through `dns` (or `hosts`, the static map, first) and vets the answer. A failed lookup is not a policy
 * decision: it throws PaddockError `UPSTREAM_ERROR` naming the host (a PaddockError from
 * the resolver, e.g. `TIMEOUT`, passes through).
 */
export async function resolveAndVet(
  rules: HostRules,
  rule: HostRule,
  target: HttpTarget,
  dns: HostResolver,
  hosts: StaticHosts = new Map(),
): Promise<PolicyDecision> {
  const mapped = hosts.get(target.host);
  if (mapped) return vetAddresses(rules, rule, target, [...mapped], mapped);
  let found: string[];
  try {
    found = await dns.lookup(target.host);
  } catch (e) {
    if (e instanceof PaddockError) throw e;
    const code = (e as { code?: unknown })?.code;
    const detail = typeof code === 'string' ? ` (${code})` : '';
    throw new PaddockError(
      'UPSTREAM_ERROR',
      `Could not resolve ${target.host}${detail}; check the host name or retry later.`,
      { host: target.host },
    );
  }
  return vetAddresses(rules, rule, target, found);
}
