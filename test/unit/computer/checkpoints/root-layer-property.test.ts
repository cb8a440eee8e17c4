/**
 * A property of root layers against a reference model: an upper layer changed at random the ways
 * overlayfs and root inside change one (files, directories, whiteouts of deleted image files,
 * directories made opaque and plain again, owners of the image's range, hard links, symlinks
 * toward the host) and checkpointed after each round restores, for every checkpoint, to exactly
 * the layer the kernel described when it was taken.
 */
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import {
  chmodSync,
  lchownSync,
  linkSync,
  mkdirSync,
  readdirSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { random } from '../../../helpers/fuzz.js';
import { describeLayer, skipReason } from './layer-fixture.js';
import { scratch } from './tree-fixture.js';

const IMAGE = { name: 'test-image', layers: ['top', 'abc'] };
const ROOT_ID = 640_000_000;

/** One random change to the upper layer `src`; `dirs`, `files` and `whiteouts` are the model's paths. */
function change(
  src: string,
  rnd: () => number,
  model: { dirs: string[]; files: string[]; whiteouts: string[] },
  step: number,
): void {
  const pick = <T>(xs: T[]): T | undefined => xs[Math.floor(rnd() * xs.length)];
  const parent = pick(model.dirs) ?? '';
  const at = join(src, parent, `n${step}`);
  const rel = join(parent, `n${step}`);
  const id = () => ROOT_ID + Math.floor(rnd() * 2000);
  switch (Math.floor(rnd() * 9)) {
    case 0:
      mkdirSync(at);
      lchownSync(at, id(), id());
      model.dirs.push(rel);
      break;
    case 1:
      writeFileSync(at, Buffer.alloc(Math.floor(rnd() * 5000), Math.floor(rnd() * 256)));
      chmodSync(at, Math.floor(rnd() * 0o7777) | 0o400);
      lchownSync(at, id(), id());
      model.files.push(rel);
      break;
    case 2: {
      // an image file deleted: a whiteout, sometimes another name of an existing one
      const other = pick(model.whiteouts);
      if (other && rnd() < 0.5) linkSync(join(src, other), at);
      else execFileSync('mknod', ['-m', '000', at, 'c', '0', '0']);
      model.whiteouts.push(rel);
      break;
    }
    case 3: {
      const d = pick(model.dirs.filter((x) => x !== ''));
      if (d) execFileSync('setfattr', ['-n', 'trusted.overlay.opaque', '-v', 'y', join(src, d)]);
      break;
    }
    case 4: {
      const d = pick(model.dirs.filter((x) => x !== ''));
      if (d) spawnSync('setfattr', ['-x', 'trusted.overlay.opaque', join(src, d)]);
      break;
    }
    case 5:
      symlinkSync(rnd() < 0.5 ? '/etc/shadow' : `../${'../'.repeat(Math.floor(rnd() * 8))}etc`, at);
      lchownSync(at, id(), id());
      break;
    case 6: {
      const f = pick(model.files);
      if (f) linkSync(join(src, f), at);
      break;
    }
    case 7: {
      const i = Math.floor(rnd() * model.whiteouts.length);
      const w = model.whiteouts[i];
      if (w) {
        rmSync(join(src, w));
        model.whiteouts.splice(i, 1);
      }
      break;
    }
    default: {
      const f = pick(model.files);
      if (f) writeFileSync(join(src, f), `rewritten ${step} ${rnd()}`);
    }
  }
}

describe('checkpoints of a root layer: property', { skip: skipReason() }, () => {
  it('every checkpoint of a randomly changing upper layer restores to exactly the layer it was taken of', async () => {
    for (const seed of [11, 12, 13]) {
      const { dir, store, cleanup } = scratch();
      try {
        const rnd = random(seed);
        const upper = join(dir, 'upper');
        const ws = join(dir, 'ws');
        mkdirSync(upper);
        mkdirSync(ws);
        const model = { dirs: [''], files: [] as string[], whiteouts: [] as string[] };
        const taken: { id: string; layer: Record<string, string> }[] = [];
        for (let round = 0; round < 6; round++) {
          for (let s = 0; s < 15; s++) change(upper, rnd, model, round * 100 + s);
          const layer = describeLayer(upper);
          const info = await store.create('box', ws, { rootLayer: { path: upper, image: IMAGE } });
          taken.push({ id: info.id, layer });
        }
        for (const [i, { id, layer }] of taken.entries()) {
          const dest = join(dir, `r${i}`);
          await store.restore('box', id, dest, { layer: 'root' });
          assert.deepEqual(describeLayer(dest), layer, `seed ${seed}, checkpoint ${i}`);
        }
        assert.equal(readdirSync(join(dir, 'data/checkpoints/box/tmp')).length, 0);
      } finally {
        cleanup();
      }
    }
  });
});
