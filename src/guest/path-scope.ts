/**
 * The file roots a file operation may touch, as the host's policy compiled them, and the pure
 * judgement of one canonical guest path against them. The guest applies it to every symlink it
 * follows and to the object it finally opens, so the decision is made on what is touched, when
 * it is touched (see scoped-walk.ts).
 */

/** One configured root and the label of the rule that names it (`files.read[0]=/workspace`). */
export interface ScopeRoot {
  label: string;
  root: string;
}

/** One set of rules: a path must be under none of `deny` and under one of `allow`. */
export interface ScopeRules {
  allow: ScopeRoot[];
  deny: ScopeRoot[];
}

/**
 * What a file operation may reach: `read` or `write` roots, as one or more rule sets that must
 * all allow (an agent's narrowed policy is the global rules and the agent's, both applied).
 */
export interface FileScope {
  kind: 'read' | 'write';
  sets: ScopeRules[];
}

/**
 * The judgement of one path: the rule that decided and, for a refusal, why (a phrase that
 * follows "which is", e.g. `outside every files.read root`).
 */
export type ScopeVerdict = { allow: true; rule: string } | { allow: false; rule: string; reason: string };

/** Whether `path` is `root` itself or below it, on a separator boundary. */
export function under(root: string, path: string): boolean {
  if (root === '/') return path.startsWith('/');
  return path === root || (path.startsWith(root) && path.charCodeAt(root.length) === 47);
}

/**
 * Judges a canonical path against every rule set of `scope`: denied by the first deny root that
 * contains it, or when some set has no allow root containing it (`default-deny`).
 */
export function judgePath(scope: FileScope, path: string): ScopeVerdict {
  if (scope.sets.length === 0) {
    return {
      allow: false,
      rule: 'default-deny',
      reason: `outside every files.${scope.kind} root (none was given)`,
    };
  }
  const rules: string[] = [];
  for (const set of scope.sets) {
    const denied = set.deny.find((r) => under(r.root, path));
    if (denied) return { allow: false, rule: denied.label, reason: 'under a denied root' };
    const allowed = set.allow.find((r) => under(r.root, path));
    if (!allowed) {
      return {
        allow: false,
        rule: 'default-deny',
        reason: `outside every files.${scope.kind} root`,
      };
    }
    rules.push(allowed.label);
  }
  return { allow: true, rule: rules.join(' & ') };
}
