/**
 * The cgroup file system as Paddock meets it: which hierarchies are mounted and where the
 * server's own group sits in each (from /proc/self/mountinfo and /proc/self/cgroup), reading and
 * writing control files without throwing, the processes of a group tree, and removing groups.
 */
import { readdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** A cgroup hierarchy: the cgroup2 tree or one v1 controller. */
export type Kind = 'unified' | 'pids' | 'memory' | 'cpu' | 'freezer';

/** A hierarchy Paddock can write, and the server's own group in it. */
export interface Hierarchy {
  kind: Kind;
  /** Directory of the server's own cgroup in this hierarchy. */
  own: string;
  /** cgroup2 only: controllers available for limits. */
  controllers?: Set<string>;
}

/** Where mountinfo says each hierarchy is, and where the server sits in it. */
export function discover(): Hierarchy[] {
  const mountinfo = readFileSync('/proc/self/mountinfo', 'utf8').split('\n');
  const membership = readFileSync('/proc/self/cgroup', 'utf8').split('\n');
  const ownPath = (match: (controllers: string[]) => boolean): string | null => {
    for (const line of membership) {
      const [, ctrls, path] = line.split(/:(.*?):/);
      if (path === undefined || ctrls === undefined) continue;
      if (match(ctrls === '' ? [] : ctrls.split(','))) return path;
    }
    return null;
  };
  const out: Hierarchy[] = [];
  for (const line of mountinfo) {
    const [left, right] = line.split(' - ');
    if (!left || !right) continue;
    const fields = left.split(' ');
    const [fstype, , superOpts] = right.split(' ');
    const root = fields[3] ?? '/';
    const mountPoint = fields[4] ?? '';
    const place = (path: string | null): string | null => {
      if (path === null || !(path === root || path.startsWith(root === '/' ? '/' : `${root}/`))) return null;
      return join(mountPoint, path.slice(root === '/' ? 0 : root.length));
    };
    if (fstype === 'cgroup2') {
      const own = place(ownPath((c) => c.length === 0));
      if (!own) continue;
      const controllers = new Set(
        (readSafe(join(own, 'cgroup.controllers')) ?? '').trim().split(/\s+/).filter(Boolean),
      );
      out.push({ kind: 'unified', own, controllers });
    } else if (fstype === 'cgroup') {
      const opts = (superOpts ?? '').split(',');
      for (const kind of ['pids', 'memory', 'cpu', 'freezer'] as const) {
        if (!opts.includes(kind)) continue;
        const own = place(ownPath((c) => c.includes(kind)));
        if (own) out.push({ kind, own });
      }
    }
  }
  return out;
}

/** A cgroup file's text, or null when it cannot be read. */
export function readSafe(file: string): string | null {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    return null;
  }
}

/** Writes a cgroup file; whether the kernel took it. */
export function tryWrite(file: string, value: string): boolean {
  try {
    writeFileSync(file, value);
    return true;
  } catch {
    return false;
  }
}

/** Host pids of every process in the group at `dir` and its children. */
export function pidsOfTree(dir: string): number[] {
  const out: number[] = [];
  const walk = (d: string) => {
    for (const line of (readSafe(join(d, 'cgroup.procs')) ?? '').split('\n'))
      if (line) out.push(Number(line));
    let entries: string[] = [];
    try {
      entries = readdirSync(d, { withFileTypes: true })
        .filter((e) => e.isDirectory())
        .map((e) => e.name);
    } catch {
      return;
    }
    for (const e of entries) walk(join(d, e));
  };
  walk(dir);
  return out;
}

/** Removes a group and its children (deepest first); what cannot be removed stays, empty. */
export function removeTree(dir: string): void {
  try {
    for (const e of readdirSync(dir, { withFileTypes: true }))
      if (e.isDirectory()) removeTree(join(dir, e.name));
  } catch {
    return;
  }
  tryRmdir(dir);
}

/** Removes one empty group if it can. */
export function tryRmdir(dir: string): void {
  try {
    rmdirSync(dir);
  } catch {
    // Left behind; harmless and empty.
  }
}
