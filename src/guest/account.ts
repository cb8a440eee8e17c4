/**
 * The account jobs and terminals run as. Where the host mapped two accounts (the agent as uid 0
 * of the namespace with a few capabilities, `--jobs-uid N` on its command line), everything the
 * agent starts drops to uid N, gid N and no supplementary groups before exec — which clears every
 * capability — and everything the agent creates on their behalf is handed to that account.
 * Without the option all processes share the agent's account.
 */
import { spawnSync } from 'node:child_process';
import { chown } from 'node:fs/promises';

/** The jobs' account, or null when they run as the agent's own. */
export interface JobAccount {
  uid: number;
  gid: number;
}

/** The account named by `--jobs-uid N`, or null. */
export function jobAccountFrom(argv: string[]): JobAccount | null {
  const i = argv.indexOf('--jobs-uid');
  const uid = i >= 0 ? Number(argv[i + 1]) : Number.NaN;
  return Number.isInteger(uid) && uid >= 0 ? { uid, gid: uid } : null;
}

/** Spawn options that start a process as the account (nothing when it is the agent's own). */
export function spawnIdentity(account: JobAccount | null): { uid?: number; gid?: number } {
  return account ? { uid: account.uid, gid: account.gid } : {};
}

/**
 * The launcher named by `--scope PATH` (the host binds it; see the host's scope-program.ts), when
 * it works here: it puts each job and terminal in a Landlock domain of its own, so that no job
 * can read another's environment or write its memory through /proc. Checked once, as the jobs'
 * account; null when it is absent or the kernel refuses (jobs then share one domain).
 */
export function jobScopeFrom(argv: string[], account: JobAccount | null): string | null {
  const i = argv.indexOf('--scope');
  const path = i >= 0 ? argv[i + 1] : undefined;
  if (!path?.startsWith('/')) return null;
  const check = spawnSync(path, [], { stdio: 'ignore', timeout: 10_000, ...spawnIdentity(account) });
  return check.status === 0 ? path : null;
}

/** `argv` started through the launcher, when there is one. */
export function scopedArgv(scope: string | null, argv: string[]): [string, ...string[]] {
  return scope ? [scope, ...argv] : (argv as [string, ...string[]]);
}

/** Gives a file or directory the agent created to the account (no-op when shared). */
export async function handOver(account: JobAccount | null, path: string): Promise<void> {
  if (account) await chown(path, account.uid, account.gid);
}

/**
 * Where jobs' tool-channel directories live (`<root>/<job number>`): created by the agent at
 * start, before any job runs, and only the agent may change it.
 */
export const TOOL_CHANNEL_ROOT = '/tmp/.paddock-channel';

/**
 * The POSIX sh client's reply FIFOs live in `<channel dir>-sh` as `f-<name>` (claimed by creating
 * `c-<name>` with noclobber), and its request id is `sh-<name>`: a call starts no process.
 */
export const SHELL_POOL_SUFFIX = '-sh';
/** Request ids of the sh client (the host answers them in the shell form). */
export const SHELL_ID_PREFIX = 'sh-';
