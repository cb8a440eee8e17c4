/**
 * Environment variables a caller may never pass to a process in the computer, because each
 * one makes an allowed program load or run code, read config, or search executables from a
 * place the caller picks. Grouped by what they hijack:
 *
 * - executable search: `PATH` (the executor sets the fixed `exec.path` itself);
 * - the dynamic loader and libc: every `LD_*` (`LD_PRELOAD`, `LD_LIBRARY_PATH`, `LD_AUDIT` …),
 *   `GCONV_PATH`, `LOCPATH`, `NLSPATH`, `HOSTALIASES`, `MALLOC_TRACE`;
 * - shells: `BASH_ENV`, `ENV`, `ZDOTDIR`, `PROMPT_COMMAND`, `PS4`, `SHELLOPTS`, `BASHOPTS`,
 *   `IFS`, `CDPATH`, `GLOBIGNORE`, `BASH_XTRACEFD`, and exported functions `BASH_FUNC_*`;
 * - interpreters: `NODE_OPTIONS`, `NODE_PATH`, `NODE_REPL_EXTERNAL_MODULE`, `PYTHONSTARTUP`,
 *   `PYTHONPATH`, `PYTHONHOME`, `PYTHONUSERBASE`, `PYTHONWARNINGS` (can import a module),
 *   `PYTHONBREAKPOINT`, `PYTHONINSPECT`, `PERL5OPT`, `PERL5LIB`, `PERLLIB`, `PERL5DB`,
 *   `RUBYOPT`, `RUBYLIB`, `JAVA_TOOL_OPTIONS`, `_JAVA_OPTIONS`, `JDK_JAVA_OPTIONS`,
 *   and npm's `npm_config_*` (any case);
 * - git: every `GIT_*` (config injection `GIT_CONFIG*`, `GIT_EXEC_PATH`, `GIT_SSH*`,
 *   `GIT_ASKPASS`, `GIT_PROXY_COMMAND`, `GIT_EXTERNAL_DIFF`, `GIT_TEMPLATE_DIR`, `GIT_DIR`,
 *   `GIT_TRACE*` …) except the commit identity and prompt variables in
 *   {@link HARMLESS_GIT_VARS};
 * - helper programs that tools start: `PAGER`, `MANPAGER`, `EDITOR`, `VISUAL`, `BROWSER`,
 *   `LESSOPEN`, `LESSCLOSE`, `SSH_ASKPASS`, `SUDO_ASKPASS`;
 * - config redirection: `OPENSSL_CONF`, `OPENSSL_ENGINES`, `OPENSSL_MODULES`, `WGETRC`,
 *   `CURL_HOME`.
 *
 * Names that are not valid variable names (empty, containing `=` or NUL, or `__proto__`)
 * and values that contain NUL are dropped too.
 */
export const DANGEROUS_ENV_VARS: readonly string[] = [
  'PATH',
  'GCONV_PATH',
  'LOCPATH',
  'NLSPATH',
  'HOSTALIASES',
  'MALLOC_TRACE',
  'BASH_ENV',
  'ENV',
  'ZDOTDIR',
  'PROMPT_COMMAND',
  'PS4',
  'SHELLOPTS',
  'BASHOPTS',
  'IFS',
  'CDPATH',
  'GLOBIGNORE',
  'BASH_XTRACEFD',
  'NODE_OPTIONS',
  'NODE_PATH',
  'NODE_REPL_EXTERNAL_MODULE',
  'PYTHONSTARTUP',
  'PYTHONPATH',
  'PYTHONHOME',
  'PYTHONUSERBASE',
  'PYTHONWARNINGS',
  'PYTHONBREAKPOINT',
  'PYTHONINSPECT',
  'PERL5OPT',
  'PERL5LIB',
  'PERLLIB',
  'PERL5DB',
  'RUBYOPT',
  'RUBYLIB',
  'JAVA_TOOL_OPTIONS',
  '_JAVA_OPTIONS',
  'JDK_JAVA_OPTIONS',
  'PAGER',
  'MANPAGER',
  'EDITOR',
  'VISUAL',
  'BROWSER',
  'LESSOPEN',
  'LESSCLOSE',
  'SSH_ASKPASS',
  'SUDO_ASKPASS',
  'OPENSSL_CONF',
  'OPENSSL_ENGINES',
  'OPENSSL_MODULES',
  'WGETRC',
  'CURL_HOME',
];

/** Prefixes of dangerous variable families (see {@link DANGEROUS_ENV_VARS}). */
export const DANGEROUS_ENV_PREFIXES: readonly string[] = ['LD_', 'BASH_FUNC_', 'GIT_'];

/** `GIT_*` variables that only set identity, dates or prompting, and so may pass. */
export const HARMLESS_GIT_VARS: readonly string[] = [
  'GIT_AUTHOR_NAME',
  'GIT_AUTHOR_EMAIL',
  'GIT_AUTHOR_DATE',
  'GIT_COMMITTER_NAME',
  'GIT_COMMITTER_EMAIL',
  'GIT_COMMITTER_DATE',
  'GIT_TERMINAL_PROMPT',
];

const exact: ReadonlySet<string> = new Set(DANGEROUS_ENV_VARS);
const harmlessGit: ReadonlySet<string> = new Set(HARMLESS_GIT_VARS);

/** Whether a caller-supplied variable named `name` must be dropped. */
export function isDangerousEnvName(name: string): boolean {
  if (name.length === 0 || name.includes('=') || name.includes('\0') || name === '__proto__') return true;
  if (exact.has(name)) return true;
  if (name.toLowerCase().startsWith('npm_config_')) return true;
  if (name.startsWith('GIT_')) return !harmlessGit.has(name);
  return DANGEROUS_ENV_PREFIXES.some((prefix) => name.startsWith(prefix));
}

/**
 * A copy of `env` without the variables a caller may never set (see
 * {@link DANGEROUS_ENV_VARS}). Non-string values and values containing NUL are dropped.
 */
export function sanitizeEnv(env: Record<string, string>): Record<string, string> {
  const clean: Record<string, string> = {};
  for (const [name, value] of Object.entries(env ?? {})) {
    if (typeof value !== 'string' || value.includes('\0') || isDangerousEnvName(name)) continue;
    clean[name] = value;
  }
  return clean;
}
