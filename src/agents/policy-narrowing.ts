import type { PolicyConfig } from '../config/schema.js';
import { createWhitelistSandbox, intersectConfinements } from '../policy/index.js';
import type { EnforceOptions, HostResolver, PolicyAction, PolicyDecision, Sandbox } from '../policy/types.js';
import { isPaddockError, PaddockError } from '../shared/errors.js';
import type { AgentPolicy } from './agent-schema.js';

/** Labels that say which side of an intersection decided (rules read `agent:http.allow[0]=…`). */
export interface IntersectOptions {
  /** Prefix of the second sandbox's rule names; default `agent:`. */
  secondLabel?: string;
  /** Shown in the message when the second sandbox refuses; default "the agent's own policy (AGENT.md)". */
  secondName?: string;
}

/**
 * A Sandbox that allows an action only when BOTH `first` (the global policy) and `second`
 * (an agent's own) allow it. Within one `enforce`, both see the same answers of the path and
 * DNS resolvers (each question is asked once), so the two checks judge the same target and the
 * addresses returned for pinning were vetted by both. A refusal by `second` is reported as such,
 * with its rule prefixed (`agent:http.allow…`); environment sanitising applies both.
 */
export function intersectSandboxes(first: Sandbox, second: Sandbox, options: IntersectOptions = {}): Sandbox {
  const label = options.secondLabel ?? 'agent:';
  const name = options.secondName ?? "the agent's own policy (AGENT.md)";
  const prefixed = (d: PolicyDecision): PolicyDecision => ({ ...d, rule: `${label}${d.rule}` });
  return {
    check(action: PolicyAction): PolicyDecision {
      const a = first.check(action);
      if (!a.allow) return a;
      const b = second.check(action);
      if (!b.allow) return prefixed(b);
      return { ...b, rule: `${a.rule} & ${label}${b.rule}`, ...bothConfinements(a, b) };
    },
    async enforce(action: PolicyAction, given: EnforceOptions = {}): Promise<PolicyDecision> {
      const shared = memoizeResolvers(given);
      const enforceSecond = async (): Promise<PolicyDecision> => {
        try {
          return await second.enforce(action, shared);
        } catch (e) {
          if (isPaddockError(e) && e.code === 'POLICY_DENIED') {
            const rule = `${label}${String(e.details.rule ?? 'unknown')}`;
            throw new PaddockError('POLICY_DENIED', `Refused by ${name}: ${e.message}`, {
              ...e.details,
              rule,
            });
          }
          throw e;
        }
      };
      // lexical refusals first: a target either side refuses costs no DNS or path lookup
      if (first.check(action).allow && !second.check(action).allow) await enforceSecond();
      const a = await first.enforce(action, shared);
      const b = await enforceSecond();
      const addresses =
        a.addresses && b.addresses ? a.addresses.filter((x) => b.addresses!.includes(x)) : b.addresses;
      return {
        ...b,
        rule: `${a.rule} & ${label}${b.rule}`,
        ...(addresses ? { addresses } : {}),
        ...bothConfinements(a, b),
      };
    },
    fileScope(kind) {
      const relabel = (r: { label: string; root: string }) => ({ ...r, label: `${label}${r.label}` });
      const narrowing = second.fileScope(kind).sets.map((set) => ({
        allow: set.allow.map(relabel),
        deny: set.deny.map(relabel),
      }));
      return { kind, sets: [...first.fileScope(kind).sets, ...narrowing] };
    },
    sanitizeEnv(env: Record<string, string>): Record<string, string> {
      return second.sanitizeEnv(first.sanitizeEnv(env));
    },
  };
}

/** For an exec both allowed: only what both let the program run and write under `shell`. */
function bothConfinements(a: PolicyDecision, b: PolicyDecision): Pick<PolicyDecision, 'confine'> {
  return a.confine || b.confine ? { confine: intersectConfinements(a.confine, b.confine) } : {};
}

/** Resolvers that answer each question once per enforce (so both sandboxes see the same world). */
function memoizeResolvers(given: EnforceOptions): EnforceOptions {
  const out: EnforceOptions = { ...given };
  if (given.dns) {
    const dns: HostResolver = given.dns;
    const cache = new Map<string, Promise<string[]>>();
    out.dns = { lookup: (host) => once(cache, host, () => dns.lookup(host)) };
  }
  return out;
}

function once<T>(cache: Map<string, Promise<T>>, key: string, load: () => Promise<T>): Promise<T> {
  let value = cache.get(key);
  if (!value) {
    value = load();
    cache.set(key, value);
  }
  return value;
}

/**
 * The agent's full policy config: every list the agent's `policy` block gives replaces the
 * global list, the others are the global ones; deny lists are the union; `exec.path` is always
 * the global one. (Used as the second half of an intersection, so it can only narrow.)
 */
export function narrowPolicyConfig(global: PolicyConfig, agent: AgentPolicy): PolicyConfig {
  return {
    files: {
      read: agent.files?.read ?? global.files.read,
      write: agent.files?.write ?? global.files.write,
      deny: [...global.files.deny, ...(agent.files?.deny ?? [])],
    },
    exec: {
      allow: agent.exec?.allow ?? global.exec.allow,
      deny: [...global.exec.deny, ...(agent.exec?.deny ?? [])],
      path: global.exec.path,
    },
    http: {
      allow: agent.http?.allow ?? global.http.allow,
      deny: [...global.http.deny, ...(agent.http?.deny ?? [])],
      hosts: global.http.hosts,
      inject: global.http.inject,
      // only the server's policy asks a person; an agent's own rules never widen on an answer
      ask: [],
    },
    tcp: { allow: agent.tcp?.allow ?? global.tcp.allow },
  };
}

/** The sandbox of an agent and the entries of its policy that the global policy makes moot. */
export interface AgentSandbox {
  config: PolicyConfig;
  sandbox: Sandbox;
  /** `policy.<list>: <entry> …` lines for allow entries the global policy does not grant. */
  warnings: string[];
}

/**
 * Builds the agent's sandbox: `intersectSandboxes(global, whitelist(narrowPolicyConfig(...)))`.
 * Throws PaddockError INVALID_ARGUMENT (from the whitelist compiler) for an invalid rule.
 * Allow entries wider than the global policy grant nothing (the global policy still decides);
 * they are reported as warnings so that the author sees it.
 */
export function buildAgentSandbox(
  global: Sandbox,
  globalConfig: PolicyConfig,
  agent: AgentPolicy,
): AgentSandbox {
  const config = narrowPolicyConfig(globalConfig, agent);
  const own = createWhitelistSandbox(config);
  const warnings: string[] = [];
  const moot = (list: string, entry: string, action: PolicyAction) => {
    if (!global.check(action).allow) {
      warnings.push(
        `policy.${list}: "${entry}" is not allowed by the global policy, so it grants nothing (an agent can only narrow paddock.yaml's policy)`,
      );
    }
  };
  for (const root of agent.files?.read ?? []) moot('files.read', root, { type: 'file.read', path: root });
  for (const root of agent.files?.write ?? []) moot('files.write', root, { type: 'file.write', path: root });
  for (const rule of agent.exec?.allow ?? [])
    moot('exec.allow', rule.name, { type: 'exec', argv: [rule.name] });
  for (const host of agent.http?.allow ?? []) {
    const probe = host.startsWith('*.') ? `probe.${host.slice(2)}` : host;
    moot('http.allow', host, { type: 'http', method: 'GET', url: `https://${probe}/` });
  }
  return { config, sandbox: intersectSandboxes(global, own), warnings };
}
