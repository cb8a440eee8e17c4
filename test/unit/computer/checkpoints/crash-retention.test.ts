import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { CheckpointStore } from '../../../../src/computer/checkpoints/store.js';
import type { PaddockError } from '../../../../src/shared/errors.js';
import { pollUntil } from '../../../helpers/poll.js';
import { describeTree, scratch } from './tree-fixture.js';

const STORE_MODULE = join(
  dirname(fileURLToPath(import.meta.url)),
  '../../../../src/computer/checkpoints/store.js',
);

function objectCount(dataDir: string): number {
  const objects = join(dataDir, 'checkpoints/box/objects');
  if (!existsSync(objects)) return 0;
  return readdirSync(objects).reduce((n, p) => n + readdirSync(join(objects, p)).length, 0);
}

function objectBytes(dataDir: string): number {
  const objects = join(dataDir, 'checkpoints/box/objects');
  let total = 0;
  for (const p of readdirSync(objects))
    for (const f of readdirSync(join(objects, p))) total += statSync(join(objects, p, f)).size;
  return total;
}

describe('checkpoint store: crashes and retention', () => {
  it('SIGKILL during a checkpoint leaves earlier checkpoints restorable, and collection removes the partial one', async () => {
    const { dir, cleanup } = scratch();
    const dataDir = join(dir, 'data');
    const store = new CheckpointStore({
      dataDir,
      retention: { maxCount: 100, maxBytes: 1e12 },
      durable: false,
    });
    const src = join(dir, 'src');
    mkdirSync(src);
    try {
      for (let i = 0; i < 20; i++) writeFileSync(join(src, `f${i}`), `first ${i}`);
      const first = await store.create('box', src);
      const firstTree = describeTree(src);
      const afterFirst = objectCount(dataDir);
      // new content everywhere: the killed checkpoint is writing many new objects
      for (let i = 0; i < 400; i++) writeFileSync(join(src, `f${i}`), Buffer.alloc(256 * 1024, i % 250));
      const child = spawn(
        process.execPath,
        [
          '--input-type=module',
          '-e',
          `const { CheckpointStore } = await import(${JSON.stringify(STORE_MODULE)});
           const s = new CheckpointStore({ dataDir: process.argv[1], retention: { maxCount: 100, maxBytes: 1e12 }, durable: false, concurrency: 2 });
           await s.create('box', process.argv[2]);
           process.stdout.write('finished');`,
          dataDir,
          src,
        ],
        { stdio: ['ignore', 'pipe', 'inherit'] },
      );
      let out = '';
      child.stdout.on('data', (b) => {
        out += b;
      });
      await pollUntil(() => objectCount(dataDir) > afterFirst + 20, 'the second checkpoint to be under way');
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGKILL');
      await exited;
      assert.equal(out, '', 'the checkpoint finished before the kill: the test did not interrupt it');
      assert.ok(existsSync(join(dataDir, 'checkpoints/box/lock')), 'the killed process held the lock');
      assert.deepEqual(
        (await store.list('box')).map((c) => c.id),
        [first.id],
        'only the checkpoint taken before the kill exists',
      );
      const gc = await store.gc('box');
      assert.ok(gc.removedObjects > 20, `removed ${gc.removedObjects}`);
      assert.equal(objectCount(dataDir), afterFirst);
      assert.deepEqual(readdirSync(join(dataDir, 'checkpoints/box/tmp')), [], 'collection emptied tmp/');
      await store.restore('box', first.id, join(dir, 'back'));
      assert.deepEqual(describeTree(join(dir, 'back')), firstTree, 'the earlier checkpoint restores exactly');
      // and the store goes on: a new checkpoint after the crash works
      const again = await store.create('box', src);
      assert.equal((await store.list('box'))[0]?.id, again.id);
    } finally {
      cleanup();
    }
  });

  it('retention keeps at most maxCount checkpoints and maxBytes of objects, and collection keeps disk bounded', async () => {
    const maxBytes = 3 * 1024 * 1024;
    const { dir, store, cleanup } = scratch({ maxCount: 4, maxBytes });
    const dataDir = join(dir, 'data');
    const src = join(dir, 'src');
    mkdirSync(src);
    try {
      writeFileSync(join(src, 'stable'), 'kept in every checkpoint');
      let last = '';
      for (let i = 0; i < 12; i++) {
        // 900 KB of new bytes each time: the byte limit binds before the count limit
        writeFileSync(join(src, 'churn'), Buffer.alloc(900 * 1024, i + 1));
        last = (await store.create('box', src)).id;
        const list = await store.list('box');
        assert.ok(list.length <= 4);
        assert.equal(list[0]?.id, last);
        assert.ok(objectBytes(dataDir) <= maxBytes, `objects hold ${objectBytes(dataDir)} bytes`);
        assert.equal(await store.bytesOf('box'), objectBytes(dataDir));
      }
      assert.equal((await store.list('box')).length, 3);
      // a checkpoint larger than the whole allowance is refused, naming the setting, and leaves nothing
      writeFileSync(join(src, 'huge'), Buffer.alloc(maxBytes + 1, 7));
      await assert.rejects(store.create('box', src), (e: unknown) => {
        assert.equal((e as PaddockError).code, 'LIMIT_EXCEEDED');
        assert.match((e as PaddockError).message, /computer\.checkpoints\.maxBytes/);
        return true;
      });
      assert.equal((await store.list('box'))[0]?.id, last);
      await store.gc('box');
      assert.ok(objectBytes(dataDir) <= maxBytes);
    } finally {
      cleanup();
    }
  });
});
