/**
 * The checkpoint tools on a real computer whose /workspace holds a project-sized tree (20,000
 * files, 200 MB, the same seeded tree as bench/checkpoints.ts), through the tools as an agent calls
 * them: `checkpoint_computer` after 10 files changed, `restore_checkpoint` and `fork_computer`
 * until the computer runs with the checkpoint's files in place, and the cost of
 * `computer.checkpoints.before: [run_command]` beside the same command without it. Peers: `cp -a`
 * of the tree for the restore and fork (what a copy-based sandbox does), a launch of an empty
 * computer, and run_command without a checkpoint.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Session, startServer } from '../test/helpers/computer-server.js';
import { makeTree } from './checkpoints.js';
import type { Figure } from './run.js';
import { median } from './stats.js';

const CHANGED = 10;
const RUNS = 5;
const ROUNDS = 3;

async function timed<T>(fn: () => Promise<T>): Promise<[number, T]> {
  const t = performance.now();
  const v = await fn();
  return [performance.now() - t, v];
}

/** Waits until `call`'s computer runs and `probe` exits 0 inside it. */
async function until(call: Session, probe: string): Promise<void> {
  for (;;) {
    const s = await call('get_computer_status');
    if (s.lifecycle === 'error') throw new Error(`boot failed: ${String(s.bootError)}`);
    if (s.lifecycle === 'running') {
      const r = await call('run_command', { script: probe, waitMs: 30_000 });
      if (r.exitCode === 0) return;
    }
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** The checkpoint tools' figures with their peers. */
export async function benchCheckpointTools(): Promise<Figure[]> {
  const root = mkdtempSync(join(tmpdir(), 'paddock-bench-cktools-'));
  const server = startServer(root, { checkpoints: { maxCount: 100, maxBytes: 1e12 } });
  try {
    const call = server.session('bench', 'bench');
    await call('launch_computer', { profileId: 'shell' });
    await until(call, 'true');
    // the tree is made on the host and copied into /workspace, owned as the jobs' files are
    const tree = join(root, 'tree');
    makeTree(tree);
    const ws = server.service.byKey('named:bench').computer!.hostWorkspace;
    const owner = statSync(ws);
    execFileSync('cp', ['-a', `${tree}/.`, ws]);
    execFileSync('chown', ['-R', `${owner.uid}:${owner.gid}`, ws]);
    await call('checkpoint_computer', { label: 'first' });

    const checkpoints: number[] = [];
    let lastId = '';
    for (let r = 0; r < RUNS; r++) {
      for (let i = 0; i < CHANGED; i++)
        writeFileSync(join(ws, `pkg${i}`, `mod${i}`, 'f0.js'), Buffer.alloc(10_000, r * CHANGED + i + 1));
      const [ms, info] = await timed(() => call('checkpoint_computer', {}));
      checkpoints.push(ms);
      lastId = String(info.checkpointId);
    }

    const marker = 'test -f /workspace/pkg99/mod1999/f9.js';
    const restores: number[] = [];
    const forks: number[] = [];
    const launches: number[] = [];
    const copies: number[] = [];
    for (let r = 0; r < ROUNDS; r++) {
      restores.push(
        (
          await timed(async () => {
            await call('restore_checkpoint', { checkpointId: lastId });
            await until(call, marker);
          })
        )[0],
      );
      const fork = server.session(`fork${r}`, `fork-${r}`);
      forks.push(
        (
          await timed(async () => {
            await call('fork_computer', { checkpointId: lastId, name: `fork-${r}` });
            await until(fork, marker);
          })
        )[0],
      );
      await server.service.removeComputer(`fork-${r}`);
      const empty = server.session(`empty${r}`);
      launches.push(
        (
          await timed(async () => {
            await empty('launch_computer', { profileId: 'shell' });
            await until(empty, 'true');
          })
        )[0],
      );
      await server.service.removeComputer(`private:mcp:empty${r}`);
      copies.push(
        (
          await timed(async () => {
            execFileSync('cp', ['-a', tree, join(root, 'copy')]);
          })
        )[0],
      );
      rmSync(join(root, 'copy'), { recursive: true });
    }

    // run_command with and without a checkpoint before it, on a second computer of the same tree
    const careful = startServer(join(root, 'careful'), {
      checkpoints: { maxCount: 100, maxBytes: 1e12, before: ['run_command'] },
    });
    const plain: number[] = [];
    const checked: number[] = [];
    try {
      const c2 = careful.session('c', 'careful');
      await c2('launch_computer', { profileId: 'shell' });
      await until(c2, 'true');
      const ws2 = careful.service.byKey('named:careful').computer!.hostWorkspace;
      execFileSync('cp', ['-a', `${tree}/.`, ws2]);
      await c2('checkpoint_computer', {});
      const manager = careful.service.byKey('named:careful');
      for (let r = 0; r < RUNS; r++) {
        writeFileSync(join(ws2, 'pkg0', 'mod0', 'f0.js'), Buffer.alloc(10_000, r + 1));
        checked.push((await timed(() => c2('run_command', { script: 'true', waitMs: 10_000 })))[0]);
        plain.push(
          (await timed(() => manager.runCommand({ script: 'true', waitMs: 10_000, timeoutMs: 60_000 })))[0],
        );
      }
    } finally {
      await careful.service.close();
    }

    // what a restore or a fork is measured against: an empty boot, and a copy of the tree
    const launchAndCopy = [
      { name: 'launch of an empty computer', value: median(launches) },
      { name: 'cp -a of the tree', value: median(copies) },
    ];
    return [
      {
        name: `checkpoint_computer after ${CHANGED} files changed, 20k files / 200 MB (median of ${RUNS})`,
        value: median(checkpoints),
        unit: 'ms',
        target: '≤ 250 ms',
      },
      {
        name: `restore_checkpoint to running with the files in place (median of ${ROUNDS})`,
        value: median(restores),
        unit: 'ms',
        target: '≤ 1 s',
        peers: launchAndCopy,
      },
      {
        name: `fork_computer to running with the files in place (median of ${ROUNDS})`,
        value: median(forks),
        unit: 'ms',
        target: '≤ 1 s',
        peers: launchAndCopy,
      },
      {
        name: `run_command "true" with a checkpoint before it (checkpoints.before, median of ${RUNS})`,
        value: median(checked),
        unit: 'ms',
        target: 'measured',
        peers: [{ name: 'run_command without', value: median(plain) }],
      },
    ];
  } finally {
    await server.service.close();
    rmSync(root, { recursive: true, force: true });
  }
}
