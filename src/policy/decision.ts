import { PaddockError } from '../shared/errors.js';
import type { PolicyAction, PolicyDecision } from './types.js';

/**
 * Names of the built-in rules, used when no configured rule decided. Configured rules are
 * named `<list>[<index>]=<rule as written>`, e.g. `files.write[0]=/workspace`.
 */
export const BUILTIN_RULES = {
  /** Nothing allowed the action. */
  defaultDeny: 'default-deny',
  /** The action itself is malformed (unknown type, wrong field types). */
  invalidAction: 'invalid-action',
  /** A path is not an absolute, normalised guest path. */
  pathSyntax: 'path-syntax',
  /** Symlink resolution failed (loop, resolver could not answer, link through a missing dir). */
  pathResolution: 'path-resolution',
  /** argv is empty, has a NUL byte, or names the executable by a relative path. */
  execSyntax: 'exec-syntax',
  /** The URL does not parse, or its host/port/method is malformed. */
  urlSyntax: 'url-syntax',
  /** The URL's scheme is not http or https. */
  urlScheme: 'url-scheme',
  /** The URL carries a user name or password. */
  urlUserinfo: 'url-userinfo',
  /** The URL's host is an IP literal that no rule names exactly. */
  ipLiteral: 'ip-literal',
  /** The host resolved to a private/loopback/link-local/metadata/... address no rule names. */
  forbiddenAddress: 'forbidden-address',
} as const;

/** An allowing decision. */
export function allow(rule: string, reason: string, extra: Partial<PolicyDecision> = {}): PolicyDecision {
  return { allow: true, rule, reason, ...extra };
}

/** A denying decision. */
export function deny(rule: string, reason: string, extra: Partial<PolicyDecision> = {}): PolicyDecision {
  return { allow: false, rule, reason, ...extra };
}

/** The label of a configured rule: `files.write[0]=/workspace`. */
export function ruleLabel(list: string, index: number, text: string): string {
  return `${list}[${index}]=${text}`;
}

const HINTS: Record<PolicyAction['type'], string> = {
  'file.read':
    'Use a path under an allowed root (policy.files.read), or ask the operator to change the policy.',
  'file.write':
    'Use a path under an allowed root (policy.files.write), or ask the operator to change the policy.',
  exec: 'Run an allowed executable (policy.exec.allow) by its bare name or absolute path without refused arguments, or ask the operator to change the policy.',
  http: 'Request an allowed host and port (policy.http.allow), or ask the operator to add a rule for it.',
  tcp: 'Connect to an allowed host and port (policy.http.allow for 80/443, policy.tcp.allow for any port), or ask the operator to add a rule for it.',
};

/** A short, secret-free description of what the action targets (no URL query strings). */
export function describeTarget(action: PolicyAction): string {
  switch (action?.type) {
    case 'file.read':
    case 'file.write':
      return `${action.type} ${JSON.stringify(String(action.path))}`;
    case 'exec':
      return `exec ${JSON.stringify(String(Array.isArray(action.argv) ? action.argv[0] : ''))}`;
    case 'http': {
      try {
        const url = new URL(String(action.url));
        return `http ${String(action.method).toUpperCase()} ${url.protocol}//${url.host}`;
      } catch {
        return 'http (unparsable URL)';
      }
    }
    case 'tcp':
      return `tcp ${String(action.host).slice(0, 255)}:${String(action.port)}`;
    default:
      return 'action';
  }
}

/**
 * The error `enforce` throws for a denial: code `POLICY_DENIED`, a message naming the rule
 * and the reason and saying what to do next, and `{ rule, reason, action }` as details.
 */
export function policyDeniedError(action: PolicyAction, decision: PolicyDecision): PaddockError {
  const hint = HINTS[action?.type] ?? 'Send one of file.read, file.write, exec, http or tcp.';
  return new PaddockError(
    'POLICY_DENIED',
    `Policy denied ${describeTarget(action)} (rule ${decision.rule}): ${decision.reason}. ${hint}`,
    {
      rule: decision.rule,
      reason: decision.reason,
      action: action?.type ?? 'unknown',
      ...(decision.ask ? { ask: true } : {}),
    },
  );
}

/**
 * The error a rule that fails to compile raises at construction. Details: `rule` (the
 * label), `path` (its config path, e.g. `policy.http.allow.0`) and `problem`.
 */
export function invalidRule(label: string, problem: string): PaddockError {
  const key = label.slice(0, label.indexOf('=') === -1 ? label.length : label.indexOf('='));
  const path = `policy.${key.replace(/\[(\d+)\]/g, '.$1')}`;
  return new PaddockError(
    'INVALID_ARGUMENT',
    `Invalid policy rule ${label}: ${problem}. Fix this entry in the policy section of paddock.yaml.`,
    { rule: label, path, problem },
  );
}

/**
 * Compiles each entry of a rule list. A bad entry throws, unless `problems` is given: then
 * its error is collected there and the entry skipped (to report every problem at once).
 */
export function compileEach<T, R>(
  entries: readonly T[],
  compile: (entry: T, index: number) => R,
  problems?: PaddockError[],
): R[] {
  const compiled: R[] = [];
  entries.forEach((entry, index) => {
    try {
      compiled.push(compile(entry, index));
    } catch (e) {
      if (!problems || !(e instanceof PaddockError)) throw e;
      problems.push(e);
    }
  });
  return compiled;
}
