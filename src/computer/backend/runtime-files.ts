import { chmodSync, cpSync, mkdirSync, readdirSync, rmSync, statSync } from 'node:fs';
import { dirname, join, parse } from 'node:path';

/**
 * Whether any account can reach `path`: every ancestor directory searchable by others and the
 * path itself readable (and, for a directory, searchable) by others. The sandbox runs as a
 * dedicated uid, which can bind only what it can reach.
 */
export function reachableByAnyone(path: string): boolean {
  try {
    const st = statSync(path);
    const need = st.isDirectory() ? 0o005 : 0o004;
    if ((st.mode & need) !== need) return false;
    let dir = dirname(path);
    const root = parse(path).root;
    for (;;) {
      if ((statSync(dir).mode & 0o001) === 0) return false;
      if (dir === root) return true;
      dir = dirname(dir);
    }
  } catch {
    return false;
  }
}

/**
 * Host files the sandbox binds read-only (the guest agent, the clients, node-pty, node itself),
 * copied once under `stageDir` when the dedicated sandbox uid could not reach them where they
 * are (e.g. a checkout under /root). Returns the path to bind.
 */
export class RuntimeStage {
  private readonly staged = new Map<string, string>();

  constructor(private readonly stageDir: () => string) {}

  path(source: string, name: string): string {
    if (reachableByAnyone(source)) return source;
    const known = this.staged.get(source);
    if (known) return known;
    const target = join(this.stageDir(), 'runtime', name);
    mkdirSync(dirname(target), { recursive: true, mode: 0o755 });
    cpSync(source, target, { recursive: true, dereference: true });
    chmodReadable(target);
    this.staged.set(source, target);
    return target;
  }

  /** A fresh copy of `source` (e.g. skills for one generation), wherever it is. */
  snapshot(source: string, name: string): string {
    return snapshotCopy(this.stageDir(), source, name);
  }
}

/** Copies `source` as it is now (no caching) to `<stageDir>/runtime/<name>`, readable by anyone. */
export function snapshotCopy(stageDir: string, source: string, name: string): string {
  const target = join(stageDir, 'runtime', name);
  rmSync(target, { recursive: true, force: true });
  mkdirSync(dirname(target), { recursive: true, mode: 0o755 });
  cpSync(source, target, { recursive: true, dereference: true });
  chmodReadable(target);
  return target;
}

function chmodReadable(path: string): void {
  const st = statSync(path);
  if (st.isDirectory()) {
    chmodSync(path, 0o755);
    for (const entry of readdirSync(path)) chmodReadable(join(path, entry));
  } else chmodSync(path, st.mode & 0o111 ? 0o755 : 0o644);
}
