/**
 * Host /proc helpers: process children, namespaced pids, liveness. Used to find the host pid
 * of a process the guest spawned (the guest only knows its own PID namespace).
 */
import { readdirSync, readFileSync } from 'node:fs';

function readText(file: string): string | null {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    return null;
  }
}

/** Direct children of a host process (all of its threads), or [] when it is gone. */
export function childrenOf(pid: number): number[] {
  let tasks: string[];
  try {
    tasks = readdirSync(`/proc/${pid}/task`);
  } catch {
    return [];
  }
  const out: number[] = [];
  for (const tid of tasks) {
    const text = readText(`/proc/${pid}/task/${tid}/children`);
    if (!text) continue;
    for (const part of text.trim().split(/\s+/)) {
      const child = Number(part);
      if (Number.isInteger(child) && child > 0) out.push(child);
    }
  }
  return out;
}

/** The `NSpid` chain of a process: its pid in each PID namespace, outermost first. */
export function nsPids(pid: number): number[] {
  const status = readText(`/proc/${pid}/status`);
  const line = status?.split('\n').find((l) => l.startsWith('NSpid:'));
  if (!line) return [];
  return line
    .slice('NSpid:'.length)
    .trim()
    .split(/\s+/)
    .map(Number)
    .filter((n) => Number.isInteger(n));
}

/**
 * Finds the host pid of the process that is `innerPid` in the innermost PID namespace, searching
 * the descendants of `rootPid` breadth-first (at most `maxDepth` levels).
 */
export function findDescendantByInnerPid(rootPid: number, innerPid: number, maxDepth = 4): number | null {
  let level = [rootPid];
  for (let depth = 0; depth < maxDepth && level.length > 0; depth++) {
    const next: number[] = [];
    for (const pid of level) {
      for (const child of childrenOf(pid)) {
        const chain = nsPids(child);
        if (chain.length > 1 && chain[chain.length - 1] === innerPid) return child;
        next.push(child);
      }
    }
    level = next;
  }
  return null;
}

/** Whether a host process exists and is not a zombie. */
export function isAlive(pid: number): boolean {
  const stat = readText(`/proc/${pid}/stat`);
  if (!stat) return false;
  const state = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
  return state !== 'Z' && state !== 'X';
}
