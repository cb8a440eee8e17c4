import { PaddockError } from '../shared/errors.js';
import type { HostResolver, PolicyAction, PolicyDecision, Sandbox } from './types.js';

/**
 * A decision as text for people (`paddock policy check`): `allow` or `deny`, the rule
 * that decided and the reason, then the resolved target and vetted addresses when known.
 */
export function explainDecision(decision: PolicyDecision): string {
  const lines = [
    `${decision.allow ? 'allow' : decision.ask ? 'ask' : 'deny'}  rule: ${decision.rule}`,
    `  reason: ${decision.reason}`,
  ];
  if (decision.resolved !== undefined) lines.push(`  resolved: ${decision.resolved}`);
  if (decision.addresses?.length) lines.push(`  addresses: ${decision.addresses.join(', ')}`);
  return lines.join('\n');
}

const ACTION_NAMES: Readonly<Record<string, PolicyAction['type']>> = {
  'file.read': 'file.read',
  'file.write': 'file.write',
  read: 'file.read',
  write: 'file.write',
  exec: 'exec',
  http: 'http',
  tcp: 'tcp',
};

const METHOD = /^[A-Za-z]+$/;

/**
 * Turns the CLI's `<action> <target>` into an action: a path for `file.read` /
 * `file.write` (also `read` / `write`), a command line split on whitespace for `exec`
 * (no quoting: argv is never interpreted by a shell), and `URL` or `METHOD URL` for `http`
 * (method upper-cased, GET by default), `host:port` for `tcp` (`[v6]:port` for IPv6). Throws INVALID_ARGUMENT for an unknown action or an
 * empty target.
 */
export function parsePolicyTarget(actionType: string, target: string): PolicyAction {
  const type = ACTION_NAMES[actionType];
  if (!type) {
    throw new PaddockError(
      'INVALID_ARGUMENT',
      `Unknown policy action "${actionType}"; use one of file.read, file.write, exec, http or tcp.`,
    );
  }
  const words = target.trim().split(/\s+/).filter(Boolean);
  if (words.length === 0) {
    throw new PaddockError(
      'INVALID_ARGUMENT',
      `The ${type} target is empty; give a path, a command line, a URL or host:port.`,
    );
  }
  switch (type) {
    case 'file.read':
    case 'file.write':
      return { type, path: target };
    case 'exec':
      return { type, argv: words };
    case 'http': {
      if (words.length === 1) return { type, method: 'GET', url: words[0]! };
      if (words.length === 2 && METHOD.test(words[0]!)) {
        return { type, method: words[0]!.toUpperCase(), url: words[1]! };
      }
      throw new PaddockError(
        'INVALID_ARGUMENT',
        'An http target is "URL" or "METHOD URL", e.g. "POST https://api.example.com/x".',
      );
    }
    case 'tcp': {
      const m = words.length === 1 ? /^(\[[^\]]*\]|[^:]+):(\d{1,5})$/.exec(words[0]!) : null;
      if (!m) {
        throw new PaddockError(
          'INVALID_ARGUMENT',
          'A tcp target is "host:port", e.g. "git.example.com:22" or "[2001:db8::1]:5432".',
        );
      }
      return { type, host: m[1]!.replace(/^\[|\]$/g, ''), port: Number(m[2]) };
    }
  }
}

/**
 * The decision the tools and a computer's connections get: `enforce` with `dns` for http and
 * tcp (so the address guard judges what the name resolves to), a denial turned back into its
 * decision (`ask` kept). A name that does not resolve is a deny naming the rule `resolve`.
 * Without `dns`, the lexical check alone.
 */
export async function decideAsEnforced(
  sandbox: Sandbox,
  action: PolicyAction,
  dns: HostResolver | null,
): Promise<PolicyDecision> {
  if (!dns || (action.type !== 'http' && action.type !== 'tcp')) return sandbox.check(action);
  try {
    return await sandbox.enforce(action, { dns });
  } catch (e) {
    if (!(e instanceof PaddockError)) throw e;
    if (e.code === 'POLICY_DENIED') {
      return {
        allow: false,
        rule: String(e.details.rule ?? 'default-deny'),
        reason: String(e.details.reason ?? e.message),
        ...(e.details.ask === true ? { ask: true } : {}),
      };
    }
    return { allow: false, rule: 'resolve', reason: e.message };
  }
}
