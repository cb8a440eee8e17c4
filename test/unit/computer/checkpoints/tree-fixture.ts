/**
 * Helpers of the checkpoint tests: a fresh data directory and a description of a tree as the
 * kernel reports it (lstat, never following a link), to compare a restored tree with its source.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { lstatSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CheckpointStore } from '../../../../src/computer/checkpoints/store.js';
import type { Retention } from '../../../../src/computer/checkpoints/types.js';

/** A scratch directory and a store in it; `cleanup` removes both. */
export function scratch(retention: Partial<Retention> = {}): {
  dir: string;
  store: CheckpointStore;
  cleanup: () => void;
} {
  const dir = mkdtempSync(join(tmpdir(), 'paddock-ck-'));
  const store = new CheckpointStore({
    dataDir: join(dir, 'data'),
    retention: { maxCount: 1000, maxBytes: 1e12, ...retention },
    durable: false,
  });
  return { dir, store, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

/**
 * Each path under `root` (relative) → type, mode, owner, mtime in µs, and content hash, link text
 * or hard-link group. Hard links are described by the first path of their inode in name order.
 */
export function describeTree(root: string, withTimes = true): Record<string, string> {
  const out: Record<string, string> = {};
  const firstOfInode = new Map<number, string>();
  const visit = (rel: string): void => {
    const path = rel ? join(root, rel) : root;
    const st = lstatSync(path, { bigint: true });
    const mode = (st.mode & 0o7777n).toString(8);
    const when = withTimes ? ` t=${st.mtimeNs / 1000n}` : '';
    const head = `mode=${mode} uid=${st.uid} gid=${st.gid}${when}`;
    if (st.isSymbolicLink()) out[rel] = `link ${head} -> ${readlinkSync(path)}`;
    else if (st.isDirectory()) {
      out[rel] = `dir ${head}`;
      for (const n of readdirSync(path).sort()) visit(rel ? `${rel}/${n}` : n);
    } else if (st.isFile()) {
      const ino = Number(st.ino);
      const group = st.nlink > 1n ? (firstOfInode.get(ino) ?? rel) : '';
      if (st.nlink > 1n && !firstOfInode.has(ino)) firstOfInode.set(ino, rel);
      const hash = createHash('sha256').update(readFileSync(path)).digest('hex');
      out[rel] = `file ${head} size=${st.size} sha=${hash}${group ? ` group=${group}` : ''}`;
    } else out[rel] = 'other';
  };
  visit('');
  return out;
}

/** Whether any file under `dir` contains `text` (to prove what a store never copied). */
export function storeHolds(dir: string, text: string): boolean {
  for (const e of readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (e.isFile() && readFileSync(join(e.parentPath, e.name)).includes(text)) return true;
  }
  return false;
}

/** Runs `source` in a separate Node process (a real concurrent attacker or writer). */
export function startNode(source: string, args: string[]): ChildProcess {
  return spawn(process.execPath, ['--input-type=module', '-e', source, ...args], {
    stdio: ['ignore', 'ignore', 'inherit'],
  });
}

/** Kills a process started by {@link startNode} and waits until it is gone. */
export async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((r) => child.once('exit', r));
  child.kill('SIGKILL');
  await exited;
}

const SWAPPER = `
import { renameSync, symlinkSync, unlinkSync } from 'node:fs';
const [src, outside] = process.argv.slice(1);
const pause = () => new Promise((r) => setImmediate(r));
for (;;) {
  renameSync(src + '/d', src + '/d.real');
  symlinkSync(outside, src + '/d');
  renameSync(src + '/x', src + '/x.real');
  symlinkSync(outside + '/f', src + '/x');
  await pause();
  unlinkSync(src + '/d');
  renameSync(src + '/d.real', src + '/d');
  unlinkSync(src + '/x');
  renameSync(src + '/x.real', src + '/x');
  await pause();
}`;

/** Swaps `d` and `x` of `src` for symlinks into `outside` and back, over and over, in another process. */
export function startSwapper(src: string, outside: string): ChildProcess {
  return startNode(SWAPPER, [src, outside]);
}
