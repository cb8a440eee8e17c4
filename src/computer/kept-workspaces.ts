/**
 * The kept workspaces on disk (`<data>/workspaces/<dir>`, see ComputerContext): which exist, how
 * much of the host's disk each takes, and removing one. A kept workspace is a disk image
 * (`disk.img`, bounded by its profile's diskMb) where the server can mount one, else a plain
 * `workspace/` directory (see backend/workspace.ts). Used by `paddock computers` with or
 * without a running server, so it reads the directory and never the server's memory.
 */
import { lstatSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { computerNameProblem } from '../shared/computer-name.js';
import { PaddockError } from '../shared/errors.js';

/** One kept workspace as listed. */
export interface KeptWorkspace {
  /** The computer it belongs to: `named:<name>`, or `private:<hash>` (the owner is not kept). */
  key: string;
  dir: string;
  /** Bytes it takes on the host's disk (a disk image's allocated blocks, metadata included). */
  bytes: number;
  files: number;
}

/** Most entries one size walk visits; a listing never hangs on a huge tree. */
const MAX_ENTRIES = 1_000_000;

/** Bytes and files under `dir`, without following symbolic links. */
export function diskUsage(dir: string): { bytes: number; files: number; partial: boolean } {
  let bytes = 0;
  let files = 0;
  let visited = 0;
  const stack = [dir];
  while (stack.length > 0) {
    const current = stack.pop()!;
    let entries: string[];
    try {
      entries = readdirSync(current);
    } catch {
      continue;
    }
    for (const name of entries) {
      if (++visited > MAX_ENTRIES) return { bytes, files, partial: true };
      const path = join(current, name);
      try {
        const st = lstatSync(path);
        if (st.isDirectory()) stack.push(path);
        else {
          files++;
          bytes += st.blocks * 512;
        }
      } catch {
        // removed meanwhile
      }
    }
  }
  return { bytes, files, partial: false };
}

/** The directory name of a named computer's kept workspace. */
export function namedWorkspaceDir(name: string): string {
  return `named-${name}`;
}

/** Every kept workspace under `<dataDir>/workspaces`. */
export function listKeptWorkspaces(dataDir: string): KeptWorkspace[] {
  const root = join(dataDir, 'workspaces');
  let names: string[];
  try {
    names = readdirSync(root);
  } catch {
    return [];
  }
  return names.flatMap((name) => {
    const m = /^(named|private)-(.+)$/.exec(name);
    if (!m) return [];
    const dir = join(root, name);
    const { bytes, files } = diskUsage(dir);
    return [{ key: `${m[1]}:${m[2]}`, dir, bytes, files }];
  });
}

/**
 * Removes the kept workspace of named computer `name` (its whole directory). Returns the bytes
 * it held, or null when it kept none. The name is checked first, so no path outside
 * `<dataDir>/workspaces` can be named.
 */
export function removeKeptWorkspace(dataDir: string, name: string): number | null {
  const problem = computerNameProblem(name);
  if (problem) throw new PaddockError('INVALID_ARGUMENT', problem);
  const dir = join(dataDir, 'workspaces', namedWorkspaceDir(name));
  let isDir = false;
  try {
    isDir = lstatSync(dir).isDirectory();
  } catch {
    return null;
  }
  if (!isDir) return null;
  const { bytes } = diskUsage(dir);
  rmSync(dir, { recursive: true, force: true });
  return bytes;
}
