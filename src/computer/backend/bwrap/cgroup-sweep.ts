/**
 * What Paddock servers that died left in their cgroups: their processes killed and their groups
 * removed, at the start of the next server.
 */
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Logger } from '../../../shared/logger.js';
import { type Kind, pidsOfTree, removeTree, tryWrite } from './cgroup-files.js';
import { isAlive } from './proc.js';

/**
 * Ends what Paddock servers that are no longer running left behind: every process still in one
 * of their groups is killed (a server killed with SIGKILL cannot clean up), then the groups are
 * removed. Runs at start-up, before this server creates its own groups.
 */
export function sweepStale(own: string, kind: Kind, logger: Logger): void {
  let names: string[] = [];
  try {
    names = readdirSync(own);
  } catch {
    return;
  }
  for (const name of names) {
    const m = /^paddock-(\d+)-[0-9a-f]+$/.exec(name);
    if (!m || Number(m[1]) === process.pid || isAlive(Number(m[1]))) continue;
    const dir = join(own, name);
    const killed = killStale(dir, kind);
    removeTree(dir);
    logger.info('computer.cgroup_swept', { dir, killed });
  }
}

/** Kills every process of a stale group and its children, waiting (bounded) until they are gone. */
function killStale(dir: string, kind: Kind): number {
  const pids = pidsOfTree(dir);
  if (pids.length === 0) return 0;
  const freezer = kind === 'freezer' ? join(dir, 'freezer.state') : null;
  if (!(kind === 'unified' && tryWrite(join(dir, 'cgroup.kill'), '1'))) {
    // v1: freeze first so nothing forks while it is being killed
    if (freezer) tryWrite(freezer, 'FROZEN');
    for (const pid of pids) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // gone already
      }
    }
    if (freezer) tryWrite(freezer, 'THAWED');
  }
  const deadline = Date.now() + 2000;
  const pause = new Int32Array(new SharedArrayBuffer(4));
  while (pidsOfTree(dir).length > 0 && Date.now() < deadline) {
    for (const pid of pidsOfTree(dir)) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // gone already
      }
    }
    Atomics.wait(pause, 0, 0, 10);
  }
  return pids.length;
}
