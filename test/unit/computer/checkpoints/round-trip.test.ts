import assert from 'node:assert/strict';
import {
  chmodSync,
  chownSync,
  closeSync,
  ftruncateSync,
  lchownSync,
  linkSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  symlinkSync,
  utimesSync,
  writeFileSync,
  writeSync,
} from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { PaddockError } from '../../../../src/shared/errors.js';
import { describeTree, scratch, storeHolds } from './tree-fixture.js';

function buildTree(src: string, secret: string): void {
  mkdirSync(join(src, 'empty/deeper'), { recursive: true });
  mkdirSync(join(src, 'ro'));
  writeFileSync(join(src, 'ro/inside'), 'in a read-only dir');
  chmodSync(join(src, 'ro'), 0o500);
  writeFileSync(join(src, 'setuid'), '#!/bin/sh\n');
  chownSync(join(src, 'setuid'), 1234, 5678);
  chmodSync(join(src, 'setuid'), 0o4755);
  mkdirSync(join(src, 'sticky'));
  chmodSync(join(src, 'sticky'), 0o1777);
  writeFileSync(join(src, 'none'), 'no permissions at all');
  chmodSync(join(src, 'none'), 0o000);
  writeFileSync(join(src, 'empty-file'), '');
  writeFileSync(join(src, 'a'), 'hard-linked');
  linkSync(join(src, 'a'), join(src, 'empty/b-link'));
  symlinkSync('/nonexistent/target', join(src, 'dangling'));
  symlinkSync(secret, join(src, 'outside-abs'));
  symlinkSync('../../../../../../etc', join(src, 'outside-rel'));
  symlinkSync('ro/inside', join(src, 'inside-rel'));
  lchownSync(join(src, 'inside-rel'), 4321, 8765);
  utimesSync(join(src, 'a'), 1_000_000_000.123456, 1_000_000_000.123456);
}

describe('checkpoint store: a tree comes back exactly', () => {
  it('restores modes (setuid, sticky, 000, read-only dirs), owners, empty dirs, hard links, mtimes and symlinks as links', async () => {
    const { dir, store, cleanup } = scratch();
    try {
      const src = join(dir, 'src');
      mkdirSync(src);
      const secret = join(dir, 'host-secret');
      writeFileSync(secret, 'HOST SECRET');
      buildTree(src, secret);
      const before = describeTree(src);
      const ck = await store.create('box', src, { label: 'first' });
      assert.equal(ck.label, 'first');
      const dest = join(dir, 'restored');
      await store.restore('box', ck.id, dest);
      assert.deepEqual(describeTree(dest), before);
      // links were kept as text: nothing of the host file they point at entered the store
      assert.equal(storeHolds(join(dir, 'data'), 'HOST SECRET'), false);
      assert.equal(storeHolds(join(dir, 'data'), 'hard-linked'), true);
    } finally {
      cleanup();
    }
  });

  it('a 100 MB file survives checkpoint → change → restore byte for byte, and an unchanged one is not stored again', async () => {
    const { dir, store, cleanup } = scratch();
    try {
      const src = join(dir, 'src');
      mkdirSync(src);
      const big = join(src, 'big.bin');
      const fd = openSync(big, 'w');
      const chunk = Buffer.alloc(1024 * 1024);
      for (let i = 0; i < 100; i++) {
        chunk.fill(i);
        chunk.writeUInt32LE(i * 7919, 17);
        writeSync(fd, chunk);
      }
      closeSync(fd);
      writeFileSync(join(src, 'small'), 'v1');
      const original = describeTree(src);
      const first = await store.create('box', src);
      assert.ok(first.addedBytes >= 100 * 1024 * 1024);
      // one small change: the next checkpoint adds its bytes and a few trees, not the big file
      writeFileSync(join(src, 'small'), 'v2');
      const second = await store.create('box', src);
      assert.ok(second.addedBytes < 64 * 1024, `added ${second.addedBytes}`);
      // change the big file too, then take the tree back to the first checkpoint
      const fd2 = openSync(big, 'r+');
      ftruncateSync(fd2, 50 * 1024 * 1024);
      closeSync(fd2);
      const dest = join(dir, 'back');
      await store.restore('box', first.id, dest);
      assert.deepEqual(describeTree(dest), original);
      const dest2 = join(dir, 'second');
      await store.restore('box', second.id, dest2);
      assert.equal(readFileSync(join(dest2, 'small'), 'utf8'), 'v2');
      assert.deepEqual(
        (await store.list('box')).map((c) => c.id),
        [second.id, first.id],
      );
    } finally {
      cleanup();
    }
  });

  it('answers NOT_FOUND for an unknown or malformed id and refuses a restore into a non-empty directory', async () => {
    const { dir, store, cleanup } = scratch();
    try {
      const src = join(dir, 'src');
      mkdirSync(src);
      writeFileSync(join(src, 'f'), 'x');
      const ck = await store.create('box', src);
      for (const id of ['ck_000000000AAAAAAAAAAA', '../../etc/passwd', '']) {
        await assert.rejects(store.restore('box', id, join(dir, 'nowhere')), (e: unknown) => {
          assert.ok(e instanceof PaddockError);
          assert.equal(e.code, 'NOT_FOUND');
          assert.match(e.message, /list_checkpoints/);
          return true;
        });
      }
      await assert.rejects(
        store.restore('box', ck.id, src),
        (e: unknown) => (e as PaddockError).code === 'FILE_EXISTS',
      );
      assert.deepEqual(readdirSync(src), ['f']);
      await assert.rejects(
        store.list('../evil'),
        (e: unknown) => (e as PaddockError).code === 'INVALID_ARGUMENT',
      );
    } finally {
      cleanup();
    }
  });
});
