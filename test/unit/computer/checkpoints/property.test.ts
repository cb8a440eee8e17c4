import assert from 'node:assert/strict';
import {
  chmodSync,
  lchownSync,
  linkSync,
  mkdirSync,
  readdirSync,
  renameSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { random } from '../../../helpers/fuzz.js';
import { describeTree, scratch } from './tree-fixture.js';

/** One random change to the tree under `src`; paths are kept in `dirs`/`files` (the model's view). */
function change(src: string, rnd: () => number, dirs: string[], files: string[], step: number): void {
  const pick = <T>(xs: T[]): T | undefined => xs[Math.floor(rnd() * xs.length)];
  const parent = pick(dirs) ?? '';
  const name = `n${step}`;
  const op = Math.floor(rnd() * 8);
  const at = join(src, parent, name);
  if (op === 0) {
    mkdirSync(at);
    dirs.push(join(parent, name));
  } else if (op === 1 || op === 2) {
    writeFileSync(at, Buffer.alloc(Math.floor(rnd() * 5000), Math.floor(rnd() * 256)));
    chmodSync(at, Math.floor(rnd() * 0o7777) | 0o400);
    files.push(join(parent, name));
  } else if (op === 3) {
    const f = pick(files);
    if (f) writeFileSync(join(src, f), `rewritten ${step} ${rnd()}`);
  } else if (op === 4) {
    symlinkSync(rnd() < 0.5 ? '/etc/passwd' : `../${'x'.repeat(Math.floor(rnd() * 10))}`, at);
    lchownSync(at, Math.floor(rnd() * 3000), Math.floor(rnd() * 3000));
  } else if (op === 5) {
    const f = pick(files);
    if (f) linkSync(join(src, f), at);
  } else if (op === 6) {
    const i = Math.floor(rnd() * files.length);
    const f = files[i];
    if (f) {
      rmSync(join(src, f));
      files.splice(i, 1);
    }
  } else {
    const i = Math.floor(rnd() * files.length);
    const f = files[i];
    if (f) {
      renameSync(join(src, f), at);
      files[i] = join(parent, name);
    }
  }
}

describe('checkpoint store: property', () => {
  it('every checkpoint of a randomly changing tree restores to exactly the tree it was taken of', async () => {
    for (const seed of [1, 2, 3, 4]) {
      const { dir, store, cleanup } = scratch();
      try {
        const rnd = random(seed);
        const src = join(dir, 'src');
        mkdirSync(src);
        const dirs: string[] = [''];
        const files: string[] = [];
        const taken: { id: string; model: Record<string, string> }[] = [];
        for (let round = 0; round < 8; round++) {
          for (let s = 0; s < 15; s++) change(src, rnd, dirs, files, round * 100 + s);
          // the reference: the tree as the kernel describes it right now
          const model = describeTree(src);
          taken.push({ id: (await store.create('box', src)).id, model });
        }
        for (const [i, { id, model }] of taken.entries()) {
          const dest = join(dir, `r${i}`);
          await store.restore('box', id, dest);
          assert.deepEqual(describeTree(dest), model, `seed ${seed}, checkpoint ${i}`);
        }
        assert.equal(readdirSync(join(dir, 'data/checkpoints/box/tmp')).length, 0);
      } finally {
        cleanup();
      }
    }
  });
});
