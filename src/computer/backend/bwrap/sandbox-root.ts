/**
 * The server's own directory in the system temp directory, used when sandboxes run as a
 * dedicated uid. It holds nothing of any computer:
 *
 * - `anchor/` (0711, root): one directory per launch (0700, the sandbox uid), on which the
 *   launch mounts the computer's disk and staged files in a mount namespace of its own, so the
 *   sandbox uid reaches them while no other account ever can (on the host they stay empty);
 * - `runtime/` (0700, the sandbox uid): copies of Paddock's own files (node, the guest agent,
 *   the clients) that the sandbox uid could not reach where they are, owned by the jobs' uid
 *   and never more open than their source;
 * - `seed/` (0700, root): the directory tree a new computer disk starts from.
 *
 * The directory itself is 0711 so the sandbox uid can pass through it; it cannot be listed.
 * Its name carries the server's pid, so a later server can tell the directories of crashed
 * servers from those of running ones and remove them at start, as it does with cgroups.
 */
import { chmodSync, chownSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type { Logger } from '../../../shared/logger.js';
import type { IdMap } from './id-map.js';
import { isAlive } from './proc.js';

const PREFIX = 'paddock-sandboxes-';

/** The parts of a server's sandbox root. */
export interface SandboxRoot {
  dir: string;
  /** Holds each launch's own directory (see launch-namespace.ts). */
  anchor: string;
  /** Staged copies of Paddock's own files (see RuntimeStage). */
  runtime: string;
  /** The tree a new disk image is made from: `workspace/` and `tmp/` with their owners. */
  seed: string;
}

/** Creates this server's directory: `<tmp>/paddock-sandboxes-<pid>-XXXXXX`, mode 0711. */
export function createSandboxRoot(tmp: string, ids: IdMap): SandboxRoot {
  const dir = mkdtempSync(join(tmp, `${PREFIX}${process.pid}-`));
  chmodSync(dir, 0o711);
  const root: SandboxRoot = {
    dir,
    anchor: join(dir, 'anchor'),
    runtime: join(dir, 'runtime'),
    seed: join(dir, 'seed'),
  };
  mkdirSync(root.anchor);
  chmodSync(root.anchor, 0o711);
  mkdirSync(root.runtime, { mode: 0o700 });
  chownSync(root.runtime, ids.agentHostId, ids.agentHostId);
  mkdirSync(root.seed, { mode: 0o700 });
  // /workspace is the jobs' home; /tmp is shared by the computer's accounts, sticky
  const workspace = join(root.seed, 'workspace');
  mkdirSync(workspace, { mode: 0o755 });
  chownSync(workspace, ids.jobHostId, ids.jobHostId);
  const tmpDir = join(root.seed, 'tmp');
  mkdirSync(tmpDir);
  chownSync(tmpDir, ids.agentHostId, ids.agentHostId);
  chmodSync(tmpDir, 0o1777);
  return root;
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
