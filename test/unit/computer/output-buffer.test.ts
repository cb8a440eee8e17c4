import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { OutputBuffer } from '../../../src/computer/output-buffer.js';

/** A reference model: every byte ever written. */
function model(chunks: Buffer[]): Buffer {
  return Buffer.concat(chunks);
}

describe('OutputBuffer', () => {
  it('returns exactly the newest capacity bytes at their absolute offsets, whatever the chunk sizes', () => {
    for (const capacity of [1, 7, 4096, 10_000]) {
      const buf = new OutputBuffer(capacity);
      const written: Buffer[] = [];
      let seed = capacity;
      for (let i = 0; i < 300; i++) {
        seed = (seed * 1103515245 + 12345) % 2 ** 31;
        const size = seed % (capacity * 2 + 3);
        const chunk = Buffer.alloc(size);
        for (let j = 0; j < size; j++) chunk[j] = (i * 31 + j) % 256;
        buf.append(chunk);
        written.push(chunk);
        const all = model(written);
        assert.equal(buf.endOffset, all.length);
        assert.equal(buf.startOffset, Math.max(0, all.length - capacity));
        const from = buf.startOffset + Math.floor((all.length - buf.startOffset) / 3);
        const slice = buf.read(from, capacity);
        assert.ok(
          slice.bytes.equals(all.subarray(from, Math.min(all.length, from + capacity))),
          `capacity ${capacity} step ${i}`,
        );
        assert.equal(slice.nextOffset, from + slice.bytes.length);
      }
    }
  });

  it('never holds more than its capacity in memory', () => {
    const buf = new OutputBuffer(64 * 1024);
    for (let i = 0; i < 1000; i++) buf.append(Buffer.alloc(100_000, i % 256));
    assert.equal(buf.endOffset, 100_000_000);
    assert.equal(buf.read(buf.startOffset, 1 << 30).bytes.length, 64 * 1024);
  });

  it('reads nothing past the end and clamps reads that start before the retained window', () => {
    const buf = new OutputBuffer(4);
    buf.append(Buffer.from('abcdef'));
    assert.equal(buf.read(6, 10).bytes.length, 0);
    assert.equal(buf.read(0, 10).bytes.toString(), 'cdef');
  });

  it('decodes any range as text without a copy, also where a character straddles the ring’s end', () => {
    const text = 'aé語🦄'.repeat(50);
    for (let shift = 0; shift < 12; shift++) {
      const buf = new OutputBuffer(64);
      buf.append(Buffer.from('x'.repeat(shift)));
      const bytes = Buffer.from(text);
      for (let at = 0; at < bytes.length; at += 7) buf.append(bytes.subarray(at, at + 7));
      const all = Buffer.concat([Buffer.from('x'.repeat(shift)), bytes]);
      for (let from = buf.startOffset; from < buf.endOffset; from += 5) {
        for (const to of [from + 1, from + 13, buf.endOffset]) {
          const want = all.subarray(from, Math.min(to, all.length)).toString('utf8');
          assert.equal(buf.text(from, to), want, `shift ${shift} ${from}..${to}`);
        }
      }
    }
  });
});
