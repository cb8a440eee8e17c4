import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { randomId, timeOrderedId } from '../../../src/shared/ids.js';

describe('randomId', () => {
  it('gives exactly the requested number of bytes, base64url, after the prefix', () => {
    for (const bytes of [1, 6, 9, 12, 15, 16, 18, 32, 45]) {
      const id = randomId('inv', bytes);
      assert.match(id, /^inv_[A-Za-z0-9_-]+$/);
      assert.equal(Buffer.from(id.slice(4), 'base64url').length, bytes);
    }
    assert.match(randomId(), /^[A-Za-z0-9_-]{16}$/);
  });

  it('carries no fixed bits: every bit of every byte takes both values (no UUID version or variant leaks)', () => {
    const bytes = 18;
    const seenOne = new Uint8Array(bytes);
    const seenZero = new Uint8Array(bytes);
    const ids = new Set<string>();
    for (let i = 0; i < 2000; i++) {
      const id = randomId('', bytes);
      ids.add(id);
      const raw = Buffer.from(id, 'base64url');
      for (let b = 0; b < bytes; b++) {
        seenOne[b]! |= raw[b]!;
        seenZero[b]! |= ~raw[b]! & 0xff;
      }
    }
    assert.equal(ids.size, 2000);
    assert.deepEqual([...seenOne], new Array(bytes).fill(0xff));
    assert.deepEqual([...seenZero], new Array(bytes).fill(0xff));
  });
});

describe('timeOrderedId', () => {
  it('sorts as text by the millisecond it was minted, over the whole range of dates', () => {
    const times = [
      0,
      1,
      35,
      36,
      1_000_000,
      Date.UTC(2026, 11, 2),
      Date.UTC(2026, 11, 2) + 1,
      Date.UTC(4000, 0, 1),
    ];
    const ids = times.map((t) => timeOrderedId('inv', 12, t));
    for (const id of ids) assert.match(id, /^inv_[0-9a-z]{9}[A-Za-z0-9_-]{16}$/);
    // SQLite compares TEXT bytewise, as this sort does
    assert.deepEqual([...ids].sort(), ids);
  });

  it('keeps its random part whole: ids minted in the same millisecond differ', () => {
    const now = Date.now();
    const ids = new Set(Array.from({ length: 1000 }, () => timeOrderedId('inv', 12, now)));
    assert.equal(ids.size, 1000);
    for (const id of ids) assert.equal(Buffer.from(id.slice(4 + 9), 'base64url').length, 12);
  });
});
