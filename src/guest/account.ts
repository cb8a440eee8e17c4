/**
 * The account jobs and terminals run as. Where the host mapped two accounts (the agent as uid 0
 * of the namespace with a few capabilities, `--jobs-uid N` on its command line), everything the
 * agent starts drops to uid N, gid N and no supplementary groups before exec — which clears every
 * capability — and everything the agent creates on their behalf is handed to that account.
 * Without the option all processes share the agent's account.
 */
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
  return Number.isInteger(uid) && uid > 0 ? { uid, gid: uid } : null;
}

/** Spawn options that start a process as the account (nothing when it is the agent's own). */
export function spawnIdentity(account: JobAccount | null): { uid?: number; gid?: number } {
  return account ? { uid: account.uid, gid: account.gid } : {};
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
