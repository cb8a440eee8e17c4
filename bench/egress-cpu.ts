/**
 * Where the CPU of an egress download goes: the server process (this bench: the egress proxy and
 * the host end of the guest link) and the guest agent (the other end of the link, relaying into
 * the computer's socket), each in CPU milliseconds per MiB moved, beside the same figure for curl
 * and the origin server of the host's own download. On a machine with few cores the sum of the
 * per-MiB costs on the path bounds the throughput: a path that spends C ms of CPU per MiB over
 * N cores cannot move more than N × 1000 / C MiB/s, whatever the window or the framing.
 */
import { readdirSync, readFileSync } from 'node:fs';

/** CPU seconds (user + system, every thread) of a process, from /proc; 0 when it is gone. */
export function cpuSeconds(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / 100;
  } catch {
    return 0;
  }
}

function childrenOf(pid: number): number[] {
  const out: number[] = [];
  let tasks: string[];
  try {
    tasks = readdirSync(`/proc/${pid}/task`);
  } catch {
    return out;
  }
  for (const task of tasks) {
    try {
      const text = readFileSync(`/proc/${pid}/task/${task}/children`, 'utf8').trim();
      if (text) out.push(...text.split(/\s+/).map(Number));
    } catch {
      // the task ended meanwhile
    }
  }
  return out;
}

/** Descendants of `pid` whose command name is `comm` (the guest agent is `node` below bwrap). */
export function descendantsNamed(pid: number, comm: string, except: readonly number[] = []): number[] {
  const found: number[] = [];
  const walk = (p: number, depth: number) => {
    if (depth > 8) return;
    for (const child of childrenOf(p)) {
      let name = '';
      try {
        name = readFileSync(`/proc/${child}/comm`, 'utf8').trim();
      } catch {
        continue;
      }
      if (name === comm && !except.includes(child)) found.push(child);
      walk(child, depth + 1);
    }
  };
  walk(pid, 0);
  return found;
}

/** CPU seconds of this process (every thread) so far. */
export function ownCpuSeconds(): number {
  const usage = process.cpuUsage();
  return (usage.user + usage.system) / 1e6;
}

/** A running total of CPU seconds per role, added to by each measured run. */
export class CpuTally {
  private readonly seconds = new Map<string, number>();

  /** Runs `work`, adding the CPU each of `roles` spent meanwhile. */
  async measure<T>(roles: Record<string, () => number>, work: () => Promise<T>): Promise<T> {
    const before = Object.fromEntries(Object.entries(roles).map(([k, read]) => [k, read()]));
    const result = await work();
    for (const [k, read] of Object.entries(roles)) {
      this.add(k, read() - (before[k] ?? 0));
    }
    return result;
  }

  add(role: string, seconds: number): void {
    this.seconds.set(role, (this.seconds.get(role) ?? 0) + Math.max(0, seconds));
  }

  /** CPU milliseconds of `role` per MiB, over `mib` MiB moved in all. */
  perMib(role: string, mib: number): number {
    return ((this.seconds.get(role) ?? 0) * 1000) / mib;
  }
}

/** `%U %S` of GNU time (the last line of `stderr`) as seconds. */
export function timeOutputSeconds(stderr: string): number {
  const last = stderr.trim().split('\n').at(-1) ?? '';
  const [user, system] = last.split(' ').map(Number);
  return (user ?? 0) + (system ?? 0);
}
