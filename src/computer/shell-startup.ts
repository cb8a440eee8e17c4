/**
 * How jobs and terminals start their shell. No startup file from a writable place ever runs:
 * a login shell would read `~/.bash_profile` or `~/.profile` from the workspace (the guest
 * account's home), so one command could put a directory of its own first on PATH — or define
 * functions — for every later job and terminal, whoever starts them. Instead every shell reads
 * only the read-only `/etc/paddock.sh` that Paddock writes: it runs `/etc/profile` (which reads
 * `/etc/profile.d`), then sets the fixed PATH last, after anything that could change it.
 */
import { GUEST_PATH } from './link/guest-layout.js';

/** The read-only startup file of every job and terminal. */
export const SHELL_INIT = '/etc/paddock.sh';

/** The text of SHELL_INIT (`path`: the fixed PATH, GUEST_PATH unless jobs run as root). */
export function shellInitText(path = GUEST_PATH): string {
  return [
    '# Written by Paddock: the startup of every job and terminal (read-only).',
    'unset BASH_ENV ENV',
    '. /etc/profile',
    `PATH=${path}`,
    'export PATH',
    '',
  ].join('\n');
}

function isBash(shell: string): boolean {
  return /(^|\/)bash$/.test(shell);
}

/**
 * The argv and extra environment of a job: `script` inline, or a script file. bash reads
 * SHELL_INIT through BASH_ENV (unset by the file itself, so child shells do not read it again);
 * other shells source it first.
 */
export function jobShell(
  shell: string,
  run: { script: string } | { file: string },
): { argv: string[]; env: Record<string, string> } {
  if (isBash(shell)) {
    const rest = 'script' in run ? ['-c', run.script] : [run.file];
    return { argv: [shell, '--noprofile', '--norc', ...rest], env: { BASH_ENV: SHELL_INIT } };
  }
  const body = 'script' in run ? run.script : `. "$0"`;
  const argv = [shell, '-c', `. ${SHELL_INIT}\n${body}`];
  return { argv: 'script' in run ? argv : [...argv, run.file], env: {} };
}

/** The argv and extra environment of a terminal's interactive shell. */
export function terminalShell(shell: string): { argv: string[]; env: Record<string, string> } {
  if (isBash(shell)) return { argv: [shell, '--noprofile', '--rcfile', SHELL_INIT, '-i'], env: {} };
  // POSIX shells read $ENV when interactive
  return { argv: [shell, '-i'], env: { ENV: SHELL_INIT } };
}
