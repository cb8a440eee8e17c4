/**
 * The `tcp` action: may a computer open a TCP connection to host:port? One decision for every
 * way a connection leaves (the resolver's names, CONNECT, SOCKS): `http.deny` first; then an
 * `http.allow` rule (a rule without a port covers 80 and 443, the ports of http and https) or a
 * `tcp.allow` rule (which always names its port), or a person's answer; an IP literal only
 * when a rule names that address. What no rule decides is refused, or asked when `http.ask`
 * covers it. Addresses are vetted by the same guard as http (http-decide.ts).
 */
import { allow, BUILTIN_RULES, deny } from './decision.js';
import {
  type AskRules,
  compileHostRule,
  findHostRule,
  type HostRule,
  type HostRules,
  type HttpTarget,
  namesHost,
  normaliseHost,
  validName,
} from './domain-rules.js';
import type { HttpDecided } from './http-decide.js';
import { ipFromHostname } from './ip.js';
import type { Grant, PolicyDecision } from './types.js';

/** The compiled rules a `tcp` action is decided by. */
export interface TcpRules {
  http: HostRules;
  tcp: HostRule[];
  ask: AskRules;
}

/** The label of `http.ask: unknown`. */
export const ASK_UNKNOWN = 'http.ask=unknown';

/** Parses the target of a `tcp` action; a denial when host or port is malformed. */
export function parseTcpTarget(host: unknown, port: unknown): HttpTarget | PolicyDecision {
  if (typeof port !== 'number' || !Number.isInteger(port) || port < 1 || port > 65535) {
    return deny(BUILTIN_RULES.urlSyntax, 'the port must be a number from 1 to 65535');
  }
  if (typeof host !== 'string' || host.length === 0 || host.length > 255 || /[\s/?#@\\%]/.test(host)) {
    return deny(BUILTIN_RULES.urlSyntax, 'the host must be a host name or an IP address');
  }
  const bare = host.replace(/^\[|\]$/g, '');
  const normal = normaliseHost(bare.includes(':') ? `[${bare}]` : bare);
  if (normal === null)
    return deny(BUILTIN_RULES.urlSyntax, 'the host is not a valid host name or IP address');
  const ip = ipFromHostname(normal);
  if (!ip && !validName(normal)) return deny(BUILTIN_RULES.urlSyntax, 'the host name is malformed');
  return { host: ip ? ip.address : normal, port, defaultPort: port === 80 ? 80 : 443, ip };
}

/** Compiles a person's answers; one that does not compile is skipped (it can never match). */
export function compileGrants(grants: readonly Grant[] | undefined): HostRule[] {
  const out: HostRule[] = [];
  for (const [i, grant] of (grants ?? []).entries()) {
    try {
      out.push(compileHostRule('grant', i, grant.entry, grant.label));
    } catch {
      // a grant is written by Paddock from a decided host:port; a malformed one allows nothing
    }
  }
  return out;
}

/** Every allow rule a `tcp` action may match, in the order they are tried. */
export function tcpAllowRules(rules: TcpRules, grants: readonly HostRule[]): HostRule[] {
  return [...rules.http.allow, ...rules.tcp, ...grants];
}

/** The lexical decision of a `tcp` action (see the file's comment). */
export function decideTcp(rules: TcpRules, target: HttpTarget, grants: readonly HostRule[]): HttpDecided {
  const where = `${target.ip ? target.ip.address : target.host} port ${target.port}`;
  const denied = findHostRule(rules.http.deny, target, true);
  if (denied) return { decision: deny(denied.label, `${where} is denied`) };
  const allowed = tcpAllowRules(rules, grants);
  if (target.ip) {
    const named = findHostRule(
      allowed.filter((r) => r.kind === 'ip'),
      target,
      false,
    );
    if (named) {
      return {
        decision: allow(named.label, `${where} is named by the rule`, { addresses: [target.ip.address] }),
        rule: named,
      };
    }
    return {
      decision: deny(
        BUILTIN_RULES.ipLiteral,
        `the host is an IP literal (${target.ip.kind} ${target.ip.address}) that no rule names on this port`,
      ),
    };
  }
  const rule = findHostRule(allowed, target, false);
  if (rule) return { decision: allow(rule.label, `${where} matches the rule`), rule };
  const asked = rules.ask === 'unknown' ? ASK_UNKNOWN : findHostRule(rules.ask, target, false)?.label;
  if (asked) {
    return {
      decision: deny(asked, `${where} is not allowed by a rule; a person may allow it`, { ask: true }),
    };
  }
  const near = allowed.find((r) => namesHost(r, target.host));
  const hint = near ? `; ${near.label} covers only port ${near.port ?? 'the default (80/443)'}` : '';
  return { decision: deny(BUILTIN_RULES.defaultDeny, `${where} is not in http.allow or tcp.allow${hint}`) };
}
