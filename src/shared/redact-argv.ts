/**
 * Redaction of an argument list held as an array (the `shell` built-in's argv, an MCP server's
 * `args`): a credential that belongs to the option before it, which the redaction of each string
 * alone cannot see — `["curl", "-u", "ada:pw"]`, `["wget", "--password", "pw"]`,
 * `["sshpass", "-p", "pw"]`, `["mysql", "-ppw"]`.
 */
import { isSecretName, PASSWORD_P_PROGRAM, REDACTED } from './redact-text.js';

/** Options whose value is `user:password`. */
const USER_OPTIONS = new Set(['-u', '--user', '--proxy-user']);
/** An option name alone (its value is the next argument). */
const OPTION = /^--?[A-Za-z][\w-]{0,63}$/;

/** A copy of `argv` with the values of credential options replaced by {@link REDACTED}. */
export function redactArgv(argv: readonly string[]): string[] {
  const out = [...argv];
  const program = (argv[0] ?? '').slice((argv[0] ?? '').lastIndexOf('/') + 1);
  const passwordP = PASSWORD_P_PROGRAM.test(program);
  for (let i = 1; i < out.length; i++) {
    const arg = out[i]!;
    const next = out[i + 1];
    if (passwordP && arg.startsWith('-p') && !arg.startsWith('--')) {
      if (arg.length > 2) out[i] = `-p${REDACTED}`;
      else if (next !== undefined) out[++i] = REDACTED;
      continue;
    }
    if (next === undefined) continue;
    if (USER_OPTIONS.has(arg)) {
      const colon = next.indexOf(':');
      if (colon >= 0) out[i + 1] = `${next.slice(0, colon + 1)}${REDACTED}`;
      i++;
    } else if (OPTION.test(arg) && !next.startsWith('-') && isSecretName(arg.replace(/^-+/, ''))) {
      out[++i] = REDACTED;
    }
  }
  return out;
}
