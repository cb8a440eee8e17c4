/**
 * Sandboxes tracked by pid file, for hosts where Paddock cannot use cgroups: each running
 * sandbox's launcher pid and start time are written to `<dir>/<pid>`, and the next server's start
 * kills whatever a dead server left (the process and every descendant), after checking the start
 * time so a reused pid is never touched.
 */
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Logger } from '../../../shared/logger.js';
import type { ComputerBackend } from '../types.js';
import { childrenOf, isAlive } from './proc.js';

/** Field 22 of /proc/<pid>/stat: start time in clock ticks since boot; null when gone. */
function startTime(pid: number): string | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19] ?? null;
  } catch {
    return null;
  }
}

export class SandboxPidFiles {
  constructor(private readonly dir: string) {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
  }

  /** Records a running sandbox's launcher process. */
  record(pid: number): void {
    const started = startTime(pid);
    if (started) writeFileSync(join(this.dir, String(pid)), `${process.pid} ${started}\n`, { mode: 0o600 });
  }

  /** Forgets a sandbox that ended. */
  forget(pid: number): void {
    rmSync(join(this.dir, String(pid)), { force: true });
  }

  /** Kills the sandboxes of servers that no longer run; returns how many processes it killed. */
  sweep(logger: Logger): number {
    let killed = 0;
    let names: string[] = [];
    try {
      names = readdirSync(this.dir);
    } catch {
      return 0;
    }
    for (const name of names) {
      const file = join(this.dir, name);
      const [server, started] = (readFileSync(file, 'utf8').trim().split(' ') as [string, string]).map(
        String,
      );
      const pid = Number(name);
      if (Number(server) === process.pid || isAlive(Number(server))) continue;
      if (Number.isInteger(pid) && startTime(pid) === started) {
        const family = [pid];
        for (let i = 0; i < family.length; i++) family.push(...childrenOf(family[i]!));
        for (const p of family) {
          try {
            process.kill(p, 'SIGKILL');
            killed++;
          } catch {
            // gone already
          }
        }
        logger.info('computer.sandbox_swept', { pid, processes: family.length });
      }
      rmSync(file, { force: true });
    }
    return killed;
  }
}

/**
 * `backend` with its sandboxes tracked by pid file in `dir`: what a dead server left there is
 * killed now, and every sandbox launched from here on is recorded until it exits.
 */
export function withPidFiles(backend: ComputerBackend, dir: string, logger: Logger): ComputerBackend {
  const files = new SandboxPidFiles(dir);
  files.sweep(logger);
  return {
    name: backend.name,
    hasProgram: (name) => backend.hasProgram(name),
    dispose: () => backend.dispose(),
    async launch(spec) {
      const instance = await backend.launch(spec);
      files.record(instance.hostPid);
      void instance.exited.then(() => files.forget(instance.hostPid));
      return instance;
    },
  };
}
