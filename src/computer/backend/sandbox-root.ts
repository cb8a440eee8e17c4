/**
 * The server's own directory in the system temp directory for workspaces and staged runtime
 * files (used when sandboxes run as a dedicated uid). Its name carries the server's pid, so a
 * later server can tell the directories of crashed servers from those of running ones and
 * remove them at start, as it does with cgroups.
 */
import { chmodSync, lstatSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type { Logger } from '../../shared/logger.js';
import { isAlive } from './proc.js';

const PREFIX = 'paddock-sandboxes-';

/** Creates this server's directory: `<tmp>/paddock-sandboxes-<pid>-XXXXXX`, mode 0711. */
export function createSandboxRoot(tmp: string): string {
  const dir = mkdtempSync(join(tmp, `${PREFIX}${process.pid}-`));
  chmodSync(dir, 0o711);
  return dir;
}

/**
 * Removes the directories of servers that are no longer running: only ours by name, owned by
 * this server's uid, and whose pid is not alive. Returns the removed paths.
 */
export function sweepSandboxRoots(tmp: string, logger: Logger): string[] {
  let names: string[];
  try {
    names = readdirSync(tmp);
  } catch {
    return [];
  }
  const removed: string[] = [];
  for (const name of names) {
    const m = /^paddock-sandboxes-(\d+)-[A-Za-z0-9]{6}$/.exec(name);
    const pid = Number(m?.[1]);
    if (!m || pid === process.pid || isAlive(pid)) continue;
    const dir = join(tmp, name);
    try {
      const s = lstatSync(dir);
      if (!s.isDirectory() || s.uid !== process.getuid?.()) continue;
      rmSync(dir, { recursive: true, force: true });
      removed.push(dir);
      logger.info('computer.sandbox_root_swept', { dir, pid });
    } catch (e) {
      logger.warn('computer.sandbox_root_leftover', { dir, error: (e as Error).message });
    }
  }
  return removed;
}
