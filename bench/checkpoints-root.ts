/**
 * Checkpoints of a root layer the size an `apt-get install` of a toolchain leaves (3,000 files,
 * 60 MB in 300 directories, 100 symlinks, 50 whiteouts of deleted image files, 10 opaque
 * directories; made here, the owners in the image's shifted range): the first checkpoint of a
 * computer whose /workspace is small and whose root layer is that, beside `cp -a` of the layer
 * (which keeps the whiteouts and attributes too) and beside a checkpoint of the same tree taken as
 * a plain directory (no opaque pass, devices skipped); then 10 files changed and the next
 * checkpoint; then restoring the layer beside `cp -a`. Medians of alternating rounds.
 */
import { execFileSync } from 'node:child_process';
import { chownSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CheckpointStore } from '../src/computer/checkpoints/store.js';
import { random } from '../test/helpers/fuzz.js';
import type { Figure } from './run.js';
import { median } from './stats.js';

const DIRS = 300;
const FILES_PER_DIR = 10;
const TOTAL_BYTES = 60 * 1024 * 1024;
const WHITEOUTS = 50;
const OPAQUE = 10;
const CHANGED = 10;
const ROUNDS = 4;
const ROOT_ID = 640_000_000;
const IMAGE = { name: 'bench-image', layers: ['top', 'bench'] };

function makeLayer(root: string): void {
  const rnd = random(31);
  const mean = TOTAL_BYTES / (DIRS * FILES_PER_DIR);
  const block = Buffer.alloc(4 * mean);
  for (let i = 0; i < block.length; i++) block[i] = Math.floor(rnd() * 256);
  const whiteouts: string[] = [];
  const opaque: string[] = [];
  for (let d = 0; d < DIRS; d++) {
    const dir = join(root, 'usr', 'lib', `pkg${d % 30}`, `mod${d}`);
    mkdirSync(dir, { recursive: true });
    for (let f = 0; f < FILES_PER_DIR; f++) {
      const size = 4 + Math.floor(rnd() * 2 * mean);
      const start = Math.floor(rnd() * (block.length - size));
      const bytes = Buffer.from(block.subarray(start, start + size));
      bytes.writeUInt32LE(d * FILES_PER_DIR + f, 0);
      writeFileSync(join(dir, `f${f}.so`), bytes);
      chownSync(join(dir, `f${f}.so`), ROOT_ID, ROOT_ID);
    }
    if (d < 100) symlinkSync(`mod${d}/f0.so`, join(dir, '..', `link${d}`));
    if (d < WHITEOUTS) whiteouts.push(join(dir, 'removed'));
    if (d < OPAQUE) opaque.push(dir);
  }
  execFileSync('/bin/sh', ['-c', 'for p; do mknod -m 000 "$p" c 0 0; done', 'sh', ...whiteouts]);
  execFileSync('setfattr', ['-n', 'trusted.overlay.opaque', '-v', 'y', ...opaque]);
}

function timed(fn: () => void): number {
  const t = performance.now();
  fn();
  return performance.now() - t;
}

async function timedAsync(fn: () => Promise<unknown>): Promise<number> {
  const t = performance.now();
  await fn();
  return performance.now() - t;
}

/** The root layer's checkpoint figures with their peers (root only: whiteouts need mknod). */
export async function benchRootLayerCheckpoints(): Promise<Figure[]> {
  if (process.getuid?.() !== 0) return [];
  const dir = mkdtempSync(join(tmpdir(), 'paddock-bench-ckroot-'));
  try {
    const upper = join(dir, 'upper');
    const ws = join(dir, 'workspace');
    makeLayer(upper);
    mkdirSync(ws);
    writeFileSync(join(ws, 'README'), 'a small workspace');
    execFileSync('sync', ['-f', dir]);
    const storeIn = (name: string) =>
      new CheckpointStore({ dataDir: join(dir, name), retention: { maxCount: 100, maxBytes: 1e12 } });
    const withRoot: number[] = [];
    const plain: number[] = [];
    const cps: number[] = [];
    for (let r = 0; r < ROUNDS; r++) {
      cps.push(
        timed(() => {
          execFileSync('cp', ['-a', upper, join(dir, 'copy')]);
          execFileSync('sync', ['-f', dir]);
        }),
      );
      rmSync(join(dir, 'copy'), { recursive: true });
      for (const n of ['data', 'plain']) rmSync(join(dir, n), { recursive: true, force: true });
      execFileSync('sync', ['-f', dir]);
      // which goes first alternates: the second finds the layer's pages warmer
      const both = [
        async () =>
          withRoot.push(
            await timedAsync(() =>
              storeIn('data').create('box', ws, { rootLayer: { path: upper, image: IMAGE } }),
            ),
          ),
        async () => plain.push(await timedAsync(() => storeIn('plain').create('box', upper))),
      ];
      if (r % 2 === 1) both.reverse();
      for (const step of both) {
        await step();
        execFileSync('sync', ['-f', dir]);
      }
    }
    const store = storeIn('data');
    const incremental: number[] = [];
    let lastId = '';
    for (let r = 0; r < ROUNDS; r++) {
      for (let i = 0; i < CHANGED; i++)
        writeFileSync(join(upper, 'usr', 'lib', `pkg${i}`, `mod${i}`, 'f1.so'), Buffer.alloc(10_000, r + 1));
      const t = performance.now();
      lastId = (await store.create('box', ws, { rootLayer: { path: upper, image: IMAGE } })).id;
      incremental.push(performance.now() - t);
    }
    const restores: number[] = [];
    const cpRestores: number[] = [];
    for (let r = 0; r < ROUNDS; r++) {
      restores.push(
        await timedAsync(() => store.restore('box', lastId, join(dir, 'restored'), { layer: 'root' })),
      );
      rmSync(join(dir, 'restored'), { recursive: true });
      cpRestores.push(timed(() => execFileSync('cp', ['-a', upper, join(dir, 'copy')])));
      rmSync(join(dir, 'copy'), { recursive: true });
    }
    return [
      {
        name: `first checkpoint with a root layer of 3k files / 60 MB, 50 whiteouts, 10 opaque dirs (median of ${ROUNDS})`,
        value: median(withRoot),
        unit: 'ms',
        target: '≤ 2× cp -a + flush',
        peers: [
          { name: 'cp -a + flush of the layer', value: median(cps) },
          { name: 'the same tree checkpointed as a plain directory', value: median(plain) },
        ],
      },
      {
        name: `checkpoint with that root layer after ${CHANGED} files changed in it (median of ${ROUNDS})`,
        value: median(incremental),
        unit: 'ms',
        target: '≤ 250 ms',
      },
      {
        name: `restore of that root layer into an empty directory (median of ${ROUNDS})`,
        value: median(restores),
        unit: 'ms',
        target: '≤ 2× cp -a',
        peers: [{ name: 'cp -a', value: median(cpRestores) }],
      },
    ];
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
