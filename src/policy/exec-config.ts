/**
 * What an allowed executable may read besides its arguments. Many programs read configuration
 * from files the caller can write (`/workspace/.gitconfig`, a repository's `.git/config`), and
 * such a file can make them run any program: a git alias starting with `!`, `core.fsmonitor`,
 * `core.pager`, a hook. Refusing `-c` on the command line is then no boundary at all. So an
 * allowed executable known to do this is started with its configuration pinned — extra
 * environment and arguments the policy adds — unless its rule sets `trustConfig: true`. A rule
 * may add its own `env` and `args` for any executable.
 */

/** Environment and leading arguments the executor must add for an allowed executable. */
export interface ExecLaunch {
  /** Variables set for the program, over everything else. */
  env: Record<string, string>;
  /** Arguments inserted right after argv[0]. */
  args: string[];
}

/** git's options that take the next argument as their value. */
const GIT_VALUE_OPTIONS = new Set(['-C', '-c', '--git-dir', '--work-tree', '--namespace', '--config-env']);

/** The git subcommand of an argv (the first argument that is not a global option or its value). */
export function gitSubcommand(argv: readonly string[]): string | null {
  for (let i = 1; i < argv.length; i++) {
    const arg = argv[i]!;
    if (GIT_VALUE_OPTIONS.has(arg)) i++;
    else if (!arg.startsWith('-')) return arg;
  }
  return null;
}

/**
 * git with no global or system config, hooks, fsmonitor, pager and external diff off, and the
 * subcommand itself pinned as an empty alias: a builtin ignores aliases, and any other name
 * fails instead of running what a writable config file defines for it.
 */
function pinGit(argv: readonly string[]): ExecLaunch {
  const pinned: [string, string][] = [
    ['core.hooksPath', '/dev/null'],
    ['core.fsmonitor', 'false'],
    ['core.pager', 'cat'],
    ['core.editor', 'false'],
    ['core.sshCommand', 'false'],
    ['diff.external', ''],
    ['protocol.ext.allow', 'never'],
  ];
  const sub = gitSubcommand(argv);
  if (sub && /^[A-Za-z0-9][A-Za-z0-9-]*$/.test(sub)) pinned.push([`alias.${sub}`, '']);
  const env: Record<string, string> = {
    GIT_CONFIG_GLOBAL: '/dev/null',
    GIT_CONFIG_NOSYSTEM: '1',
    GIT_PAGER: 'cat',
    GIT_EXTERNAL_DIFF: '',
    GIT_TERMINAL_PROMPT: '0',
    GIT_CONFIG_COUNT: String(pinned.length),
  };
  pinned.forEach(([key, value], i) => {
    env[`GIT_CONFIG_KEY_${i}`] = key;
    env[`GIT_CONFIG_VALUE_${i}`] = value;
  });
  return { env, args: ['--no-pager'] };
}

/** Executables whose configuration Paddock pins by default, by base name. */
const PINNED: Record<string, (argv: readonly string[]) => ExecLaunch> = { git: pinGit };

/** Names whose configuration is pinned unless a rule trusts it (for docs and tests). */
export const PINNED_EXECUTABLES = Object.keys(PINNED);

/** The launch additions for an allowed executable: the built-in pins, then the rule's own. */
export function execLaunch(
  name: string,
  argv: readonly string[],
  rule: { env: Record<string, string>; args: readonly string[]; trustConfig: boolean },
): ExecLaunch {
  const pinned = !rule.trustConfig ? PINNED[name]?.(argv) : undefined;
  return {
    env: { ...(pinned?.env ?? {}), ...rule.env },
    args: [...(pinned?.args ?? []), ...rule.args],
  };
}
