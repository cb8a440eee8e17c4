import assert from 'node:assert/strict';
import { lstatSync, mkdirSync, readdirSync, readFileSync, readlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { PaddockError } from '../../../../src/shared/errors.js';
import { pollUntil } from '../../../helpers/poll.js';
import { scratch, startNode, startSwapper, stop, storeHolds } from './tree-fixture.js';

const WRITER = `
import { openSync, writeSync } from 'node:fs';
const [src, n, size] = process.argv.slice(1);
const fds = Array.from({ length: Number(n) }, (_, i) => openSync(src + '/w' + i, 'r+'));
const buf = Buffer.alloc(Number(size));
let v = 1;
for (;;) {
  for (const fd of fds) {
    buf.fill(v);
    // the whole new content in one write: every state between writes is uniform
    writeSync(fd, buf, 0, buf.length, 0);
    await new Promise((r) => setTimeout(r, 10));
  }
  v = (v % 250) + 1;
}`;

function uniform(buf: Buffer): boolean {
  return buf.length > 0 && buf.every((b) => b === buf[0]);
}

describe('checkpoint store under attack', () => {
  it('a directory or file swapped for a symlink during a snapshot never makes the store read outside the tree', async () => {
    const { dir, store, cleanup } = scratch();
    const src = join(dir, 'src');
    const outside = join(dir, 'outside');
    mkdirSync(join(src, 'd'), { recursive: true });
    mkdirSync(join(outside, 'sub'), { recursive: true });
    writeFileSync(join(outside, 'f'), 'HOST SECRET');
    writeFileSync(join(outside, 'sub', 'g'), 'HOST SECRET');
    for (let i = 0; i < 50; i++) writeFileSync(join(src, 'd', `f${i}`), `inside ${i}`);
    writeFileSync(join(src, 'x'), 'inside x');
    const swapper = startSwapper(src, outside);
    try {
      const ids: string[] = [];
      // a file the swapper renames over and over may keep changing through every try: that
      // checkpoint is refused with TIMEOUT (as documented), which reads nothing outside either
      let refused = 0;
      for (let i = 0; i < 40; i++) {
        try {
          ids.push((await store.create('box', src)).id);
        } catch (e) {
          if (!(e instanceof PaddockError && e.code === 'TIMEOUT')) throw e;
          refused++;
        }
      }
      await stop(swapper);
      assert.ok(ids.length > 0, `every checkpoint was refused (${refused})`);
      assert.equal(storeHolds(join(dir, 'data'), 'HOST SECRET'), false, 'the store copied a host file');
      let sawLink = 0;
      for (const [i, id] of ids.entries()) {
        const dest = join(dir, `r${i}`);
        await store.restore('box', id, dest);
        for (const name of readdirSync(dest)) {
          const st = lstatSync(join(dest, name));
          if (st.isSymbolicLink()) {
            sawLink++;
            assert.ok(readlinkSync(join(dest, name)).startsWith(outside));
          } else if (st.isFile()) assert.match(readFileSync(join(dest, name), 'utf8'), /^inside/);
          else
            for (const f of readdirSync(join(dest, name)))
              assert.match(readFileSync(join(dest, name, f), 'utf8'), /^inside/);
        }
      }
      process.stderr.write(
        `swap test: ${sawLink} links caught in ${ids.length} checkpoints (${refused} refused)\n`,
      );
    } finally {
      await stop(swapper);
      cleanup();
    }
  });

  it('a checkpoint taken while a writer rewrites files holds each file as before or after a write, never torn', async () => {
    const { dir, store, cleanup } = scratch();
    const src = join(dir, 'src');
    mkdirSync(src);
    const n = 6;
    const size = 2 * 1024 * 1024;
    for (let i = 0; i < n; i++) writeFileSync(join(src, `w${i}`), Buffer.alloc(size, 0));
    const writer = startNode(WRITER, [src, String(n), String(size)]);
    try {
      // the writer is running (a file changed from its zeros) before any checkpoint
      await pollUntil(() => readFileSync(join(src, 'w0'))[0] !== 0, 'the writer to start');
      // control, reported rather than required (how often a plain read lands mid-write depends
      // on the machine): a plain reader can see torn files, so the writer really races a copy
      let tornPlain = 0;
      for (let i = 0; i < 200; i++) if (!uniform(readFileSync(join(src, `w${i % n}`)))) tornPlain++;
      process.stderr.write(`torn test: a plain read saw ${tornPlain} torn files in 200\n`);
      const ids: string[] = [];
      for (let i = 0; i < 12; i++) ids.push((await store.create('box', src)).id);
      await stop(writer);
      for (const [i, id] of ids.entries()) {
        const dest = join(dir, `r${i}`);
        await store.restore('box', id, dest);
        for (let f = 0; f < n; f++) {
          const bytes = readFileSync(join(dest, `w${f}`));
          assert.equal(bytes.length, size);
          assert.ok(uniform(bytes), `checkpoint ${id} holds w${f} torn`);
        }
      }
    } finally {
      await stop(writer);
      cleanup();
    }
  });
});
