import type { PaddockError } from '../shared/errors.js';
import { allow, BUILTIN_RULES, compileEach, deny, invalidRule, ruleLabel } from './decision.js';
import type { PolicyDecision } from './types.js';

/** Longest guest path accepted, in characters (Linux PATH_MAX is 4096 bytes). */
export const MAX_PATH_CHARS = 4096;

/** A lexically checked guest path, or the reason it is not one. */
export type GuestPath = { ok: true; path: string } | { ok: false; reason: string };

/**
 * Checks that `input` is an absolute, normalised guest path and returns it without a
 * trailing slash (`/ws/` becomes `/ws`; `/` stays `/`). Refused: empty, non-absolute,
 * NUL bytes, backslashes, `.` and `..` segments, empty segments (`//`), over
 * {@link MAX_PATH_CHARS}. No I/O; nothing is rewritten beyond the one trailing slash.
 */
export function parseGuestPath(input: unknown): GuestPath {
  if (typeof input !== 'string' || input.length === 0) return { ok: false, reason: 'the path is empty' };
  if (input.length > MAX_PATH_CHARS) {
    return { ok: false, reason: `the path is longer than ${MAX_PATH_CHARS} characters` };
  }
  if (input.charCodeAt(0) !== 47) {
    return { ok: false, reason: `${JSON.stringify(input)} is not absolute; give the full guest path` };
  }
  const end = input.length > 1 && input.charCodeAt(input.length - 1) === 47 ? input.length - 1 : input.length;
  if (end === 1 && input.length > 1) return { ok: false, reason: 'the path has an empty segment (//)' };
  let segStart = 1;
  for (let i = 1; i <= end; i++) {
    const c = i < end ? input.charCodeAt(i) : 47;
    if (c === 0) return { ok: false, reason: 'the path contains a NUL byte' };
    if (c === 92) return { ok: false, reason: 'the path contains a backslash' };
    if (c !== 47) continue;
    const len = i - segStart;
    if (len === 0 && end > 1) return { ok: false, reason: 'the path has an empty segment (//)' };
    if (
      (len === 1 && input.charCodeAt(segStart) === 46) ||
      (len === 2 && input.charCodeAt(segStart) === 46 && input.charCodeAt(segStart + 1) === 46)
    ) {
      return { ok: false, reason: 'the path has a "." or ".." segment; give the normalised path' };
    }
    segStart = i + 1;
  }
  return { ok: true, path: end === input.length ? input : input.slice(0, end) };
}

/** A compiled path root. */
export interface PathRoot {
  label: string;
  root: string;
  /** `root + '/'` (just `/` for the root directory). */
  prefix: string;
}

/** Whether `path` (already parsed) is `root` itself or below it, on a separator boundary. */
export function isUnder(root: PathRoot, path: string): boolean {
  return path === root.root || path.startsWith(root.prefix);
}

/**
 * Compiles one list of roots (`files.read` …); throws INVALID_ARGUMENT naming a bad entry
 * (or collects it in `problems`, see compileEach).
 */
export function compileRoots(list: string, roots: readonly string[], problems?: PaddockError[]): PathRoot[] {
  return compileEach(
    roots,
    (text, index) => {
      const label = ruleLabel(list, index, text);
      const parsed = parseGuestPath(text);
      if (!parsed.ok) {
        throw invalidRule(label, `a root must be an absolute, normalised guest path (${parsed.reason})`);
      }
      return { label, root: parsed.path, prefix: parsed.path === '/' ? '/' : `${parsed.path}/` };
    },
    problems,
  );
}

/** The compiled file rules. */
export interface FileRules {
  read: PathRoot[];
  write: PathRoot[];
  deny: PathRoot[];
}

/** The first root in `roots` that contains `path`, if any. */
export function findRoot(roots: readonly PathRoot[], path: string): PathRoot | undefined {
  for (const root of roots) if (isUnder(root, path)) return root;
  return undefined;
}

/**
 * Decides a parsed path: `files.deny` first, then the allow list of `kind`, else default
 * deny. `via` describes how the path was reached (for symlink re-checks).
 */
export function decidePath(
  rules: FileRules,
  kind: 'read' | 'write',
  path: string,
  via?: { requested: string },
): PolicyDecision {
  const shown = via
    ? `${JSON.stringify(via.requested)} resolves to ${JSON.stringify(path)}, which`
    : 'the path';
  const extra = via ? { resolved: path } : {};
  const denied = findRoot(rules.deny, path);
  if (denied) return deny(denied.label, `${shown} is under a denied root`, extra);
  const allowed = findRoot(kind === 'read' ? rules.read : rules.write, path);
  if (allowed) return allow(allowed.label, `${shown} is inside an allowed ${kind} root`, extra);
  return deny(BUILTIN_RULES.defaultDeny, `${shown} is outside every files.${kind} root`, extra);
}

/** Lexical decision for a requested path (syntax, then {@link decidePath}). */
export function checkPathLexically(rules: FileRules, kind: 'read' | 'write', input: unknown): PolicyDecision {
  const parsed = parseGuestPath(input);
  if (!parsed.ok) return deny(BUILTIN_RULES.pathSyntax, parsed.reason);
  return decidePath(rules, kind, parsed.path);
}
