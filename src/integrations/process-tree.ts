import { existsSync, readdirSync, readFileSync } from 'node:fs';

const HAS_PROC = existsSync('/proc/self/stat');

/** A process identified by pid and start time (so a reused pid is never mistaken for it). */
export interface ProcessRef {
  pid: number;
  startTime: string;
}

/** Parses `/proc/<pid>/stat`: parent pid and start time, or undefined when it is gone. */
function readStat(pid: number): { state: string; ppid: number; startTime: string } | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // the command name (field 2) may contain spaces and parentheses; fields resume after the last ")"
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return { state: fields[0] ?? '', ppid: Number(fields[1]), startTime: fields[19] ?? '' };
  } catch {
    return undefined;
  }
}

/**
 * The process `pid` and all its descendants (Linux `/proc`; elsewhere just `pid` without
 * a start time). Taken before shutting a server down so that helpers it spawned (an `npx`
 * wrapper's child, a shell's child) can be reaped even after their parent is gone.
 */
export function processTree(pid: number): ProcessRef[] {
  if (!HAS_PROC) return [{ pid, startTime: '' }];
  const root = readStat(pid);
  if (!root) return [];
  const children = new Map<number, number[]>();
  let entries: string[] = [];
  try {
    entries = readdirSync('/proc');
  } catch {
    return [{ pid, startTime: root.startTime }];
  }
  const starts = new Map<number, string>([[pid, root.startTime]]);
  for (const name of entries) {
    const child = Number(name);
    if (!Number.isInteger(child) || child <= 0) continue;
    const stat = readStat(child);
    if (!stat) continue;
    starts.set(child, stat.startTime);
    const list = children.get(stat.ppid);
    if (list) list.push(child);
    else children.set(stat.ppid, [child]);
  }
  const out: ProcessRef[] = [];
  const queue = [pid];
  while (queue.length > 0) {
    const p = queue.shift()!;
    out.push({ pid: p, startTime: starts.get(p) ?? '' });
    queue.push(...(children.get(p) ?? []));
  }
  return out;
}

/** True when the process still runs (and is the same process, by start time). Zombies count as gone. */
export function isAlive(ref: ProcessRef): boolean {
  if (!HAS_PROC) {
    try {
      process.kill(ref.pid, 0);
      return true;
    } catch {
      return false;
    }
  }
  const stat = readStat(ref.pid);
  if (!stat) return false;
  if (ref.startTime && stat.startTime !== ref.startTime) return false;
  return stat.state !== 'Z' && stat.state !== 'X';
}

/** Sends `signal` to every listed process that is still the same process. */
export function signalAll(refs: readonly ProcessRef[], signal: NodeJS.Signals): void {
  for (const ref of refs) {
    if (!isAlive(ref)) continue;
    try {
      process.kill(ref.pid, signal);
    } catch {
      // already gone
    }
  }
}
