import { requireCjs } from '../shared/require-cjs.js';

const picomatch = requireCjs('picomatch') as typeof import('picomatch');

import type { ExecRule } from '../config/schema.js';
import type { PaddockError } from '../shared/errors.js';
import { allow, BUILTIN_RULES, compileEach, deny, invalidRule, ruleLabel } from './decision.js';
import { execLaunch } from './exec-config.js';
import { findRoot, type PathRoot, parseGuestPath } from './path-rules.js';
import type { PolicyDecision } from './types.js';

/** An allow rule as compiled: the launch fields may be left out (nothing added). */
type AllowRuleConfig = Pick<ExecRule, 'name' | 'denyArgs'> &
  Partial<Pick<ExecRule, 'env' | 'args' | 'trustConfig' | 'helpers'>>;

/** Directories no executable search path may contain: anyone in the computer can write them. */
const WORLD_WRITABLE_DIRS = ['/tmp', '/var/tmp', '/dev/shm', '/run/user'];

interface ArgRule {
  label: string;
  test(arg: string): boolean;
}

interface AllowRule {
  label: string;
  index: number;
  args: ArgRule[];
  launch: { env: Record<string, string>; args: string[]; trustConfig: boolean };
  /** Programs it may start under `shell` (absolute paths: files or directories). */
  helpers: string[];
}

/** The compiled exec rules. */
export interface ExecRules {
  /** The fixed search path, in order. */
  path: readonly string[];
  pathSet: ReadonlySet<string>;
  allowByName: ReadonlyMap<string, AllowRule[]>;
  allowByPath: ReadonlyMap<string, AllowRule[]>;
  denyByName: ReadonlyMap<string, string>;
  denyByPath: ReadonlyMap<string, string>;
}

/** A bare executable name or an absolute path, as a rule gives it. */
function parseProgram(label: string, text: string): { name: string; path?: string } {
  if (text.length === 0) throw invalidRule(label, 'the executable name is empty');
  if (/[\s*?[\]{}\\\0]/.test(text)) {
    throw invalidRule(
      label,
      'executables are matched exactly; wildcards, whitespace and backslashes are not allowed',
    );
  }
  if (!text.includes('/')) {
    if (text === '.' || text === '..') throw invalidRule(label, 'not an executable name');
    return { name: text };
  }
  const parsed = parseGuestPath(text);
  if (!parsed.ok || parsed.path !== text || text === '/') {
    throw invalidRule(label, 'give a bare name (resolved against exec.path) or an absolute, normalised path');
  }
  return { name: text.slice(text.lastIndexOf('/') + 1), path: text };
}

/**
 * One refused-argument pattern. Besides the glob itself (picomatch, `*` also crosses `/`,
 * dotfiles included), two spellings that option parsers accept are refused too:
 * - a literal long option (`--upload-pack`) also refuses `--upload-pack=VALUE` and its
 *   unambiguous abbreviations (`--upload-p`, at least 3 characters), which getopt_long and
 *   git's parse-options accept;
 * - a literal short option (`-c`) also refuses it inside a cluster or with an attached value
 *   (`-xc`, `-cCMD`): any single-dash argument containing that letter.
 */
function compileArgRule(label: string, pattern: string): ArgRule {
  if (pattern.length === 0) throw invalidRule(label, 'the argument pattern is empty');
  let glob: (arg: string) => boolean;
  try {
    glob = picomatch(pattern, { bash: true, dot: true });
  } catch (e) {
    throw invalidRule(label, `the glob does not compile (${e instanceof Error ? e.message : String(e)})`);
  }
  const literal = !picomatch.scan(pattern).isGlob;
  if (literal && /^--[^=]+$/.test(pattern)) {
    return {
      label,
      test(arg) {
        if (glob(arg)) return true;
        if (!arg.startsWith('--')) return false;
        const eq = arg.indexOf('=');
        const name = eq === -1 ? arg : arg.slice(0, eq);
        return name === pattern || (name.length >= 3 && pattern.startsWith(name));
      },
    };
  }
  if (literal && /^-[^-]$/.test(pattern)) {
    const letter = pattern[1]!;
    return {
      label,
      test: (arg) =>
        glob(arg) || (arg.length > 1 && arg[0] === '-' && arg[1] !== '-' && arg.includes(letter, 1)),
    };
  }
  return { label, test: glob };
}

/**
 * Compiles `exec.allow`, `exec.deny` and `exec.path`. Throws INVALID_ARGUMENT naming the
 * rule for empty or wildcard names, relative paths, and a search path or allowed absolute
 * executable inside a writable location (`/tmp`, `/var/tmp`, `/dev/shm` or a files.write root).
 * With `problems`, bad entries are collected there instead (see compileEach).
 */
export function compileExecRules(
  config: { allow: readonly AllowRuleConfig[]; deny: readonly string[]; path: readonly string[] },
  writeRoots: readonly PathRoot[],
  problems?: PaddockError[],
): ExecRules {
  const writable = (label: string, path: string) => {
    const root = findRoot(writeRoots, path);
    if (root) throw invalidRule(label, `${path} is inside ${root.label}, which file tools can write`);
    const dir = WORLD_WRITABLE_DIRS.find((d) => path === d || path.startsWith(`${d}/`));
    if (dir) throw invalidRule(label, `${path} is inside ${dir}, which anyone in the computer can write`);
  };
  const path = compileEach(
    config.path,
    (text, index) => {
      const label = ruleLabel('exec.path', index, text);
      const parsed = parseGuestPath(text);
      if (!parsed.ok) {
        throw invalidRule(
          label,
          `a search directory must be an absolute, normalised path (${parsed.reason})`,
        );
      }
      writable(label, parsed.path);
      return parsed.path;
    },
    problems,
  );
  const allowByName = new Map<string, AllowRule[]>();
  const allowByPath = new Map<string, AllowRule[]>();
  const compileAllow = (rule: AllowRuleConfig, index: number) => {
    const label = ruleLabel('exec.allow', index, rule.name);
    const program = parseProgram(label, rule.name);
    if (program.path) writable(label, program.path);
    const args = compileEach(
      rule.denyArgs,
      (pattern, j) => compileArgRule(`exec.allow[${index}].denyArgs[${j}]=${pattern}`, pattern),
      problems,
    );
    const helpers = compileEach(
      rule.helpers ?? [],
      (text, j) => {
        const helperLabel = `exec.allow[${index}].helpers[${j}]=${text}`;
        const parsed = parseGuestPath(text);
        if (!parsed.ok || parsed.path !== text || text === '/') {
          throw invalidRule(helperLabel, 'a helper must be an absolute, normalised path other than /');
        }
        writable(helperLabel, text);
        return text;
      },
      problems,
    );
    const map = program.path ? allowByPath : allowByName;
    const key = program.path ?? program.name;
    const launch = { env: rule.env ?? {}, args: rule.args ?? [], trustConfig: rule.trustConfig ?? false };
    map.set(key, [...(map.get(key) ?? []), { label, index, args, launch, helpers }]);
  };
  compileEach(config.allow, compileAllow, problems);
  const denyByName = new Map<string, string>();
  const denyByPath = new Map<string, string>();
  const compileDeny = (text: string, index: number) => {
    const label = ruleLabel('exec.deny', index, text);
    const program = parseProgram(label, text);
    if (program.path) {
      if (!denyByPath.has(program.path)) denyByPath.set(program.path, label);
    } else if (!denyByName.has(program.name)) denyByName.set(program.name, label);
  };
  compileEach(config.deny, compileDeny, problems);
  return { path, pathSet: new Set(path), allowByName, allowByPath, denyByName, denyByPath };
}

/** The argv[0] of an action, parsed: its base name and, when given as one, its absolute path. */
type Program = { ok: true; name: string; path?: string } | { ok: false; reason: string };

function parseArgv(argv: unknown): Program {
  if (!Array.isArray(argv) || argv.length === 0) return { ok: false, reason: 'argv is empty' };
  for (const arg of argv) {
    if (typeof arg !== 'string') return { ok: false, reason: 'every argv entry must be a string' };
    if (arg.includes('\0')) return { ok: false, reason: 'an argument contains a NUL byte' };
  }
  const first = argv[0] as string;
  if (first.length === 0) return { ok: false, reason: 'argv[0] is empty' };
  if (!first.includes('/')) {
    if (first === '.' || first === '..') return { ok: false, reason: `${first} is not an executable name` };
    return { ok: true, name: first };
  }
  if (!first.startsWith('/')) {
    return {
      ok: false,
      reason: `${JSON.stringify(first)} is a relative path; use a bare name or an absolute path`,
    };
  }
  const parsed = parseGuestPath(first);
  if (!parsed.ok || parsed.path !== first || first === '/') {
    return { ok: false, reason: `${JSON.stringify(first)} is not a normalised absolute path` };
  }
  return { ok: true, name: first.slice(first.lastIndexOf('/') + 1), path: first };
}

/** Deny rules that hit `program` (a bare name is checked as every `<exec.path dir>/<name>`). */
function deniedBy(rules: ExecRules, program: { name: string; path?: string }): string | undefined {
  const byName = rules.denyByName.get(program.name);
  if (byName) return byName;
  if (program.path) return rules.denyByPath.get(program.path);
  for (const dir of rules.path) {
    const hit = rules.denyByPath.get(`${dir === '/' ? '' : dir}/${program.name}`);
    if (hit) return hit;
  }
  return undefined;
}

/**
 * Lexical exec decision. argv[0] must be a bare name allowed by name, an allowed absolute
 * path, or `<dir in exec.path>/<allowed bare name>`; relative paths are refused. `exec.deny`
 * wins over allow. Every argument is checked against the refused-argument rules of every
 * allow rule that matched.
 */
export function checkExec(rules: ExecRules, argv: unknown): PolicyDecision {
  const program = parseArgv(argv);
  if (!program.ok) return deny(BUILTIN_RULES.execSyntax, program.reason);
  const denied = deniedBy(rules, program);
  if (denied) return deny(denied, `${JSON.stringify(program.path ?? program.name)} is a denied executable`);
  let matched: AllowRule[] | undefined;
  if (program.path) {
    const dir = program.path.slice(0, Math.max(1, program.path.lastIndexOf('/')));
    const exact = rules.allowByPath.get(program.path) ?? [];
    const viaDir = rules.pathSet.has(dir) ? (rules.allowByName.get(program.name) ?? []) : [];
    matched =
      exact.length + viaDir.length > 0 ? [...exact, ...viaDir].sort((a, b) => a.index - b.index) : undefined;
  } else {
    matched = rules.allowByName.get(program.name);
  }
  if (!matched) {
    const why = program.path
      ? `${JSON.stringify(program.path)} is neither an allowed absolute path nor an allowed name in an exec.path directory`
      : `${JSON.stringify(program.name)} is not an allowed executable`;
    return deny(BUILTIN_RULES.defaultDeny, why);
  }
  const args = argv as string[];
  for (let i = 1; i < args.length; i++) {
    for (const rule of matched) {
      for (const arg of rule.args) {
        if (arg.test(args[i]!)) {
          return deny(arg.label, `argument ${i} ${JSON.stringify(args[i])} is refused for ${program.name}`);
        }
      }
    }
  }
  const first = matched[0]!;
  const launch = execLaunch(program.name, args, first.launch);
  const confine = { helpers: first.helpers, write: [] as string[] };
  const extra = program.path ? { resolved: program.path, launch, confine } : { launch, confine };
  return allow(
    first.label,
    `${JSON.stringify(program.path ?? program.name)} is an allowed executable`,
    extra,
  );
}

/**
 * Re-checks a bare name after the computer resolved it against `exec.path`: the result must
 * be `<dir in exec.path>/<name>` and not a denied absolute path.
 */
export function checkResolvedExec(
  rules: ExecRules,
  name: string,
  resolved: string | null,
): PolicyDecision | null {
  if (resolved === null) {
    return deny(
      BUILTIN_RULES.defaultDeny,
      `no executable named ${JSON.stringify(name)} in exec.path (${rules.path.join(':')})`,
    );
  }
  const expected = rules.path.some((dir) => resolved === `${dir === '/' ? '' : dir}/${name}`);
  if (!expected) {
    return deny(
      BUILTIN_RULES.execSyntax,
      `${JSON.stringify(name)} resolved to ${JSON.stringify(resolved)}, outside exec.path`,
    );
  }
  const denied = rules.denyByPath.get(resolved);
  if (denied) {
    return deny(
      denied,
      `${JSON.stringify(name)} resolves to ${JSON.stringify(resolved)}, a denied executable`,
    );
  }
  return null;
}
