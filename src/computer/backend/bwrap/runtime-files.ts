import { chownSync, cpSync, lstatSync, mkdirSync, readdirSync, rmSync, statSync } from 'node:fs';
import { dirname, join, parse, relative, sep } from 'node:path';

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
 * copied once into the server's private `runtime/` directory when the dedicated sandbox uid
 * could not reach them where they are (e.g. a checkout under /root). A copy belongs to the
 * jobs' uid and keeps its source's modes, so it is never more open than the source; its
 * directory is the sandbox uid's alone. Returns the path to bind.
 */
export class RuntimeStage {
  private readonly staged = new Map<string, string>();

  constructor(
    private readonly runtimeDir: () => string,
    private readonly ownerId: number,
  ) {}

  path(source: string, name: string): string {
    if (reachableByAnyone(source)) return source;
    const known = this.staged.get(source);
    if (known) return known;
    const runtime = this.runtimeDir();
    const target = join(runtime, name);
    makeDirsLike(runtime, dirname(target));
    copyOwned(source, target, this.ownerId);
    this.staged.set(source, target);
    return target;
  }
}

/**
 * Makes the directories from `base` down to `dir` (a nested name such as `packages/@scope/pkg`)
 * with `base`'s owner and mode, so whoever can traverse `base` traverses them too.
 */
function makeDirsLike(base: string, dir: string): void {
  const { uid, gid, mode } = statSync(base);
  const steps = relative(base, dir).split(sep).filter(Boolean);
  let path = base;
  for (const step of steps) {
    path = join(path, step);
    mkdirSync(path, { recursive: true, mode: mode & 0o777 });
    chownSync(path, uid, gid);
  }
}

/**
 * Copies `source` as it is now (symbolic links followed) to `target`, replacing what was there:
 * every entry owned by `ownerId` with the modes of its source (setuid and setgid bits dropped).
 * Used for a generation's read-only mounts the sandbox uid cannot reach.
 */
export function copyOwned(source: string, target: string, ownerId: number): void {
  rmSync(target, { recursive: true, force: true });
  cpSync(source, target, { recursive: true, dereference: true });
  chownTree(target, ownerId);
}

function chownTree(path: string, id: number): void {
  // chown clears setuid and setgid bits of files; every mount of a computer is nosuid anyway
  chownSync(path, id, id);
  if (lstatSync(path).isDirectory()) {
    for (const entry of readdirSync(path)) chownTree(join(path, entry), id);
  }
}
