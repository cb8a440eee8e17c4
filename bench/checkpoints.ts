/**
 * Checkpoints of a project-sized tree (20,000 files, 200 MB in 2,000 directories, made here with
 * seeded sizes and contents): the first checkpoint beside `cp -a` of the same tree (and `cp -a`
 * followed by a flush, since a checkpoint flushes its objects), then 10 files changed and the
 * incremental checkpoint's time and the disk it added beside the bytes changed, then a restore
 * beside `cp -a`. All in one directory on one filesystem, in the same run; on a shared machine each
 * figure alternates with its peer over a few rounds and both report medians. Then the root layer
 * of a computer on an image (checkpoints-root.ts).
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CheckpointStore } from '../src/computer/checkpoints/store.js';
import { random } from '../test/helpers/fuzz.js';
import { benchRootLayerCheckpoints } from './checkpoints-root.js';
import type { Figure } from './run.js';
import { median } from './stats.js';

const DIRS = 2000;
const FILES_PER_DIR = 10;
const TOTAL_BYTES = 200 * 1024 * 1024;
const CHANGED = 10;
const RUNS = 5;
const ROUNDS = 3;

/** Writes the seeded project-sized tree (20,000 files, 200 MB) under `root`. */
export function makeTree(root: string): void {
  const rnd = random(30);
  const mean = TOTAL_BYTES / (DIRS * FILES_PER_DIR);
  const block = Buffer.alloc(4 * mean);
  for (let i = 0; i < block.length; i++) block[i] = Math.floor(rnd() * 256);
  for (let d = 0; d < DIRS; d++) {
    const dir = join(root, `pkg${d % 100}`, `mod${d}`);
    mkdirSync(dir, { recursive: true });
    for (let f = 0; f < FILES_PER_DIR; f++) {
      const size = 4 + Math.floor(rnd() * 2 * mean);
      const start = Math.floor(rnd() * (block.length - size));
      const bytes = Buffer.from(block.subarray(start, start + size));
      bytes.writeUInt32LE(d * FILES_PER_DIR + f, 0); // no two files alike
      writeFileSync(join(dir, `f${f}.js`), bytes);
    }
  }
}

function timed(fn: () => void): number {
  const t = performance.now();
  fn();
  return performance.now() - t;
}

async function timedAsync<T>(fn: () => Promise<T>): Promise<[number, T]> {
  const t = performance.now();
  const v = await fn();
  return [performance.now() - t, v];
}

/** The checkpoint figures with their peers. */
export async function benchCheckpoints(): Promise<Figure[]> {
  const dir = mkdtempSync(join(tmpdir(), 'paddock-bench-ck-'));
  try {
    const src = join(dir, 'workspace');
    makeTree(src);
    execFileSync('sync', ['-f', dir]);
    // the machine is shared: each figure and its peer alternate over ROUNDS and report medians
    const storeIn = (name: string) =>
      new CheckpointStore({ dataDir: join(dir, name), retention: { maxCount: 100, maxBytes: 1e12 } });
    const firsts: number[] = [];
    const cpAs: number[] = [];
    const cpSyncs: number[] = [];
    for (let r = 0; r < ROUNDS; r++) {
      cpAs.push(timed(() => execFileSync('cp', ['-a', src, join(dir, 'copy')])));
      rmSync(join(dir, 'copy'), { recursive: true });
      cpSyncs.push(
        timed(() => {
          execFileSync('cp', ['-a', src, join(dir, 'copy')]);
          execFileSync('sync', ['-f', dir]);
        }),
      );
      rmSync(join(dir, 'copy'), { recursive: true });
      if (r > 0) rmSync(join(dir, 'data'), { recursive: true });
      execFileSync('sync', ['-f', dir]);
      firsts.push((await timedAsync(() => storeIn('data').create('box', src)))[0]);
    }
    const first = median(firsts);
    const cpA = median(cpAs);
    const cpSync = median(cpSyncs);
    const store = storeIn('data');
    const incremental: number[] = [];
    const added: number[] = [];
    let changedBytes = 0;
    let lastId = '';
    for (let r = 0; r < RUNS; r++) {
      changedBytes = 0;
      for (let i = 0; i < CHANGED; i++) {
        const bytes = Buffer.alloc(10_000, r * CHANGED + i + 1);
        writeFileSync(join(src, `pkg${i}`, `mod${i}`, 'f0.js'), bytes);
        changedBytes += bytes.length;
      }
      const [ms, info] = await timedAsync(() => store.create('box', src));
      incremental.push(ms);
      added.push(info.addedBytes);
      lastId = info.id;
    }
    const restores: number[] = [];
    const cpRestores: number[] = [];
    for (let r = 0; r < ROUNDS; r++) {
      restores.push((await timedAsync(() => store.restore('box', lastId, join(dir, 'restored'))))[0]);
      rmSync(join(dir, 'restored'), { recursive: true });
      cpRestores.push(timed(() => execFileSync('cp', ['-a', src, join(dir, 'copy')])));
      rmSync(join(dir, 'copy'), { recursive: true });
    }
    const restoreMs = median(restores);
    const cpRestore = median(cpRestores);
    const rootLayer = await benchRootLayerCheckpoints();
    return [
      {
        name: `first checkpoint, 20k files / 200 MB (median of ${ROUNDS})`,
        value: first,
        unit: 'ms',
        target: '≤ 2× cp -a',
        peers: [
          { name: 'cp -a', value: cpA },
          { name: 'cp -a + flush', value: cpSync },
        ],
      },
      {
        name: `checkpoint after ${CHANGED} files changed (median of ${RUNS})`,
        value: median(incremental),
        unit: 'ms',
        target: '≤ 250 ms',
      },
      {
        name: 'disk added by that checkpoint',
        value: median(added) / 1024,
        unit: 'KiB',
        target: '≤ 1 MiB + changed',
        peers: [{ name: 'bytes changed', value: changedBytes / 1024 }],
      },
      {
        name: `restore of a checkpoint into an empty directory (median of ${ROUNDS})`,
        value: restoreMs,
        unit: 'ms',
        target: '≤ 1 s (to running)',
        peers: [{ name: 'cp -a', value: cpRestore }],
      },
      ...rootLayer,
    ];
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
