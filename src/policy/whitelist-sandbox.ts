import type { PolicyConfig } from '../config/schema.js';
import type { FileScope } from '../guest/path-scope.js';
import { confinementWriteRoots } from './confine.js';
import { BUILTIN_RULES, deny, policyDeniedError } from './decision.js';
import {
  compileAskRules,
  compileHostRules,
  compileTcpRules,
  type HostRule,
  type HttpTarget,
  parseHttpTarget,
} from './domain-rules.js';
import { sanitizeEnv } from './env.js';
import { checkExec, checkResolvedExec, compileExecRules, type ExecRules } from './exec-rules.js';
import { decideHttp, resolveAndVet } from './http-decide.js';
import { compileRoots, decidePath, type FileRules, type PathRoot, parseGuestPath } from './path-rules.js';
import { compileStaticHosts, type StaticHosts } from './static-hosts.js';
import { compileGrants, decideTcp, parseTcpTarget, type TcpRules, tcpAllowRules } from './tcp-decide.js';
import type {
  EnforceOptions,
  ExecResolver,
  HostResolver,
  PolicyAction,
  PolicyDecision,
  Sandbox,
} from './types.js';

/** Defaults for {@link createWhitelistSandbox}: resolvers `enforce` uses when a call passes none. */
export interface WhitelistSandboxOptions {
  dns?: HostResolver;
  which?: ExecResolver;
}

/** The whitelist policy; see {@link createWhitelistSandbox}. */
export interface WhitelistSandbox extends Sandbox {
  /** The fixed executable search path (`exec.path`): the `PATH` an executor must set. */
  readonly execPath: readonly string[];
}

interface Compiled extends TcpRules {
  files: FileRules;
  exec: ExecRules;
  hosts: StaticHosts;
}

/** Used when a name is in `http.hosts`: the static map answers, no resolver is asked. */
const NO_DNS: HostResolver = {
  lookup: (host) => Promise.reject(new Error(`no resolver for ${host}`)),
};

type Decided = {
  decision: PolicyDecision;
  http?: HttpTarget;
  hostRule?: HostRule;
  /** For `tcp`: the person's answers the decision was made with. */
  grants?: HostRule[];
};

function decideCwd(files: FileRules, cwd: unknown): PolicyDecision | null {
  if (cwd === undefined) return null;
  const parsed = parseGuestPath(cwd);
  if (!parsed.ok) return deny(BUILTIN_RULES.pathSyntax, `the working directory is invalid: ${parsed.reason}`);
  const decision = decidePath(files, 'read', parsed.path);
  return decision.allow ? null : { ...decision, reason: `working directory: ${decision.reason}` };
}

/**
 * Builds the whitelist policy from the `policy` config section. Every rule is compiled here
 * once; an invalid one throws PaddockError `INVALID_ARGUMENT` naming it (`*`, `*.com`,
 * relative or dotted roots, empty names, wildcard executables, a search path anyone can write).
 *
 * Decisions: deny by default, deny rules before allow rules, and each decision names the
 * configured rule that decided (`files.write[0]=/workspace`, `http.allow[2]=*.example.com`)
 * or a built-in one (see BUILTIN_RULES: `default-deny`, `path-syntax`, `ip-literal` …).
 *
 * - `file.read` / `file.write`: lexical checks of the path against `files.deny`, then
 *   `files.read` or `files.write` (separate lists). Where symlinks lead is judged in the guest,
 *   on what it opens, against `fileScope(kind)`.
 * - `exec`: argv[0] exactly as allowed, arguments against `denyArgs`, `exec.deny` first; a
 *   `cwd`, if given, must lexically be a readable path (the guest resolves it within the read scope). With an ExecResolver, a bare name is resolved
 *   against `exec.path` and re-checked. An allowing decision carries `confine`: the rule's
 *   helpers and the write roots, which the `shell` built-in has the kernel enforce.
 * - `tcp`: a computer's connection to host:port (tcp-decide.ts): `http.allow` (80/443 by
 *   default) or `tcp.allow` rules, `http.ask` for what a person may allow, then as `http`.
 * - `http`: scheme, userinfo, IP literals, host and port rules. With a HostResolver, the
 *   resolved addresses are vetted and returned in `addresses` for the caller to pin. A name in
 *   `http.hosts` resolves to its listed addresses (no resolver asked), which pass the guard.
 *   Redirects are not followed here: the caller must call `enforce` again for every hop.
 */
export function createWhitelistSandbox(
  config: PolicyConfig,
  defaults: WhitelistSandboxOptions = {},
): WhitelistSandbox {
  const files: FileRules = {
    read: compileRoots('files.read', config.files.read),
    write: compileRoots('files.write', config.files.write),
    deny: compileRoots('files.deny', config.files.deny),
  };
  const rules: Compiled = {
    files,
    exec: compileExecRules(config.exec, files.write),
    http: compileHostRules(config.http),
    tcp: compileTcpRules(config.tcp?.allow ?? []),
    ask: compileAskRules(config.http.ask ?? []),
    hosts: compileStaticHosts(config.http.hosts ?? {}),
  };

  const confineWrite = confinementWriteRoots(files);

  const decide = (action: PolicyAction, given: Pick<EnforceOptions, 'grants'> = {}): Decided => {
    switch (action?.type) {
      case 'file.read':
      case 'file.write': {
        const parsed = parseGuestPath(action.path);
        if (!parsed.ok) return { decision: deny(BUILTIN_RULES.pathSyntax, parsed.reason) };
        return {
          decision: decidePath(rules.files, action.type === 'file.read' ? 'read' : 'write', parsed.path),
        };
      }
      case 'exec': {
        const checked = checkExec(rules.exec, action.argv);
        const decision = checked.confine
          ? { ...checked, confine: { ...checked.confine, write: confineWrite } }
          : checked;
        return { decision: decision.allow ? (decideCwd(rules.files, action.cwd) ?? decision) : decision };
      }
      case 'http': {
        const target = parseHttpTarget(action.method, action.url);
        if ('allow' in target) return { decision: target };
        const { decision, rule } = decideHttp(rules.http, target);
        return { decision, http: target, hostRule: rule };
      }
      case 'tcp': {
        const target = parseTcpTarget(action.host, action.port);
        if ('allow' in target) return { decision: target };
        const grants = compileGrants(given.grants);
        const { decision, rule } = decideTcp(rules, target, grants);
        return { decision, http: target, hostRule: rule, grants };
      }
      default:
        return {
          decision: deny(
            BUILTIN_RULES.invalidAction,
            'the action type is not file.read, file.write, exec, http or tcp',
          ),
        };
    }
  };

  const enforceDecided = async (action: PolicyAction, given: EnforceOptions): Promise<PolicyDecision> => {
    const { decision, http, hostRule, grants } = decide(action, given);
    if (!decision.allow) return decision;
    switch (action.type) {
      case 'file.read':
      case 'file.write':
        return decision;
      case 'exec': {
        const which = given.which ?? defaults.which;
        const name = action.argv[0]!;
        if (!which || name.includes('/')) return decision;
        const found = await which.which(name, rules.exec.path);
        return checkResolvedExec(rules.exec, name, found) ?? { ...decision, resolved: found! };
      }
      case 'http': {
        const dns = given.dns ?? defaults.dns;
        if (!http || http.ip || !hostRule) return decision;
        if (!dns && !rules.hosts.has(http.host)) return decision;
        return resolveAndVet(rules.http, hostRule, http, dns ?? NO_DNS, rules.hosts);
      }
      case 'tcp': {
        const dns = given.dns ?? defaults.dns;
        if (!http || http.ip || !hostRule) return decision;
        if (!dns && !rules.hosts.has(http.host)) return decision;
        const vetting = { allow: tcpAllowRules(rules, grants ?? []), deny: rules.http.deny };
        return resolveAndVet(vetting, hostRule, http, dns ?? NO_DNS, rules.hosts);
      }
    }
  };

  const scopeOf = (roots: PathRoot[]) => roots.map(({ label, root }) => ({ label, root }));
  const scopes: Record<'read' | 'write', FileScope> = {
    read: { kind: 'read', sets: [{ allow: scopeOf(files.read), deny: scopeOf(files.deny) }] },
    write: { kind: 'write', sets: [{ allow: scopeOf(files.write), deny: scopeOf(files.deny) }] },
  };

  return {
    execPath: rules.exec.path,
    check: (action) => decide(action).decision,
    fileScope: (kind) => scopes[kind],
    async enforce(action, enforceOptions = {}) {
      const decision = await enforceDecided(action, enforceOptions);
      if (!decision.allow) throw policyDeniedError(action, decision);
      return decision;
    },
    sanitizeEnv,
  };
}
