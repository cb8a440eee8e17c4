/**
 * The `sh` prologues that start a job: the ordinary one (wait for release, apply rlimits, exec
 * the program) and the spare one (a shell started ahead of its job, in its own family, that
 * reads its job from the hold pipe and becomes it).
 */
import type { CallArgs } from './protocol.js';

type Rlimits = CallArgs<'exec'>['rlimits'];

/** Builds the `sh -c` prologue: wait for release, apply rlimits, exec the program. */
export function wrapperScript(args: CallArgs<'exec'>, stderrName: string | null = null): string {
  const parts: string[] = [];
  // Clients compare their own fd 2 with this file to detect a redirected stderr.
  if (args.toolChannel) parts.push(stderrIdentity(`${args.toolChannel.dir}/stderr`, stderrName));
  if (args.hold) parts.push('IFS= read -r _ <&3 || exit 126; exec 3<&-');
  parts.push(...rlimitCommands(args.rlimits));
  parts.push('exec "$@"');
  return parts.join('; ');
}

function rlimitCommands(rlimits: Rlimits): string[] {
  const parts: string[] = [];
  const { openFiles, fileSizeBytes, processes, dataBytes } = rlimits;
  if (openFiles) parts.push(`ulimit -n ${Math.floor(openFiles)} || exit 126`);
  // POSIX counts `ulimit -f` in 512-byte blocks; dash and bash (as sh) agree.
  if (fileSizeBytes) parts.push(`ulimit -f ${Math.max(1, Math.floor(fileSizeBytes / 512))} || exit 126`);
  if (dataBytes) parts.push(`ulimit -d ${Math.max(1, Math.floor(dataBytes / 1024))} || exit 126`);
  // RLIMIT_NPROC is `-u` in bash and `-p` in dash.
  if (processes) parts.push(`{ ulimit -u ${processes} 2>/dev/null || ulimit -p ${processes}; } || exit 126`);
  return parts;
}

/** Whether a shell is bash (which a spare shell becomes itself instead of exec-ing it anew). */
export function isBash(shell: string | undefined): boolean {
  return shell !== undefined && /(^|\/)bash$/.test(shell);
}

/**
 * The spare shell's argv: apply the rlimits, then read the job (everything up to the end of the
 * hold pipe) and run it; without a job it exits with 126. Where the jobs' shell is bash, the
 * spare is that bash, already started, and runs a `bash -c` script itself; else it is `sh`,
 * which reads line by line with `read` and execs the job.
 */
export function spareArgv(rlimits: Rlimits, shell: string | undefined): string[] {
  if (shell && isBash(shell)) {
    // the job's set-up, then its script, each after its length: evaluated apart, so the script's
    // lines count from 1. `read -N` takes a counted read at once (a delimited read from a pipe or
    // socket costs a system call per byte: 3 ms for a 2 KB set-up); the spare has no locale, so a
    // character is a byte.
    const field = (name: string) =>
      `IFS= read -r -N ${LENGTH_DIGITS} n <&3 && IFS= read -r -N "$((10#$n))" ${name} <&3`;
    const reader = [
      ...rlimitCommands(rlimits),
      `{ ${field('p')} && ${field('s')}; } || exit 126`,
      '[ -n "$p" ] || exit 126',
      'exec 3<&-',
      'eval "$p"',
      'unset p n',
      'eval "unset s; $s"',
    ].join('; ');
    return [shell, '--noprofile', '--norc', '-c', reader, shell];
  }
  const reader = [
    ...rlimitCommands(rlimits),
    // a literal newline joins the lines again
    's=; while IFS= read -r l <&3; do s="$s$l\n"; done',
    'exec 3<&-',
    'eval "$s"',
    'exit 126',
  ].join('; ');
  return ['/bin/sh', '-c', reader, 'paddock-job'];
}

/** Environment names a shell can export (other names make a job skip the spare shell). */
export const EXPORTABLE_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/**
 * The job a spare shell becomes (for a bash spare: its set-up and its script, each after its
 * length): its cwd, exactly its environment (the spare started with none; `cd` adds PWD as the ordinary start does, and OLDPWD is dropped), its stderr identity
 * for the tool channel, then its argv. A bash spare given `bash --noprofile --norc -c SCRIPT`
 * does what that bash would: it reads `$BASH_ENV` and runs SCRIPT itself; any other argv is
 * exec'd.
 */
export function spareJob(
  args: CallArgs<'exec'>,
  shell: string | undefined,
  stderrName: string | null = null,
): string {
  const lines = [`cd -P -- ${shellQuote(args.cwd)} || exit 126`, 'unset OLDPWD'];
  for (const [name, value] of Object.entries(args.env)) lines.push(`export ${name}=${shellQuote(value)}`);
  if (args.toolChannel) lines.push(stderrIdentity(`${args.toolChannel.dir}/stderr`, stderrName));
  const [program, ...rest] = args.argv;
  const inline =
    isBash(shell) &&
    program === shell &&
    rest.length === 4 &&
    rest[0] === '--noprofile' &&
    rest[1] === '--norc' &&
    rest[2] === '-c';
  if (inline) {
    lines.push('if [ -n "${BASH_ENV-}" ]; then . "$BASH_ENV"; fi');
    return counted(`${lines.join('\n')}\n`) + counted(rest[3]!);
  }
  lines.push(`exec ${args.argv.map(shellQuote).join(' ')}`);
  const setup = `${lines.join('\n')}\n`;
  return isBash(shell) ? counted(setup) + counted('') : setup;
}

/** Digits of the length before each part of a bash spare's job. */
const LENGTH_DIGITS = 8;

/** A part of a bash spare's job: its length in bytes, zero-padded, then the part. */
function counted(part: string): string {
  const bytes = Buffer.byteLength(part);
  if (bytes >= 10 ** LENGTH_DIGITS) throw new RangeError(`a spare's job part of ${bytes} bytes is too long`);
  return String(bytes).padStart(LENGTH_DIGITS, '0') + part;
}

/**
 * Writes what `readlink /proc/self/fd/2` shows into `file`: the name the agent knows (a pipe made
 * from a FIFO), else `socket:[inode]` / `pipe:[inode]` from the kernel's fdinfo and the shell's
 * own `test`, without starting `readlink` (that is only the fallback).
 */
function stderrIdentity(file: string, known: string | null): string {
  if (known !== null) return `printf '%s\\n' ${shellQuote(known)} > ${shellQuote(file)} || exit 126`;
  return [
    'i=; while read -r k v; do [ "$k" = ino: ] && i=$v; done </proc/self/fdinfo/2',
    `{ if [ -n "$i" ] && [ -S /proc/self/fd/2 ]; then echo "socket:[$i]"; elif [ -n "$i" ] && [ -p /proc/self/fd/2 ]; then echo "pipe:[$i]"; else readlink /proc/self/fd/2; fi; } > ${shellQuote(file)} || exit 126`,
  ].join('; ');
}

function shellQuote(text: string): string {
  return `'${text.replaceAll("'", "'\\''")}'`;
}
