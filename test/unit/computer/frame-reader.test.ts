import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { PassThrough } from 'node:stream';
import { describe, it } from 'node:test';
import { FrameAssembler, readFrames } from '../../../src/computer/link/frame-reader.js';
import { encodeFrame, type Frame, FrameKind } from '../../../src/guest/frames.js';

/** A seeded pseudo-random source (a failure names a seed that replays it). */
function seeded(seed: number): () => number {
  let state = seed;
  return () => {
    state = (state * 1103515245 + 12345) & 0x7fffffff;
    return state;
  };
}

/** A frame as plain data, its payload copied out of whatever buffer it pointed into. */
const copy = (f: Frame) => ({ kind: f.kind, stream: f.stream, fd: f.fd, payload: Buffer.from(f.payload) });

describe('the host’s frame reader', () => {
  it('frames a byte stream cut anywhere, into one reused read buffer, exactly as sent (2,000 seeded cuts)', () => {
    const next = seeded(0xf4a3e);
    for (let round = 0; round < 2000; round++) {
      const sent = Array.from({ length: 1 + (next() % 6) }, (_, i) => ({
        kind: [FrameKind.Data, FrameKind.End, FrameKind.Control, FrameKind.Attachment][next() % 4]!,
        stream: next() % 5000,
        fd: next() % 3,
        payload: Buffer.alloc([0, 1, 9, 10, 300, 70_000][next() % 6]!, i + round),
      }));
      const wire = Buffer.concat(sent.map((f) => encodeFrame(f.kind, f.stream, f.fd, f.payload)));
      // the reader's buffer is overwritten by every read, as the kernel's reads into it would
      const readBuffer = Buffer.alloc(64 * 1024);
      const assembler = new FrameAssembler();
      const got: ReturnType<typeof copy>[] = [];
      for (let at = 0; at < wire.length; ) {
        const n = Math.min(wire.length - at, 1 + (next() % readBuffer.length));
        wire.copy(readBuffer, 0, at, at + n);
        assembler.push(readBuffer.subarray(0, n), (f) => got.push(copy(f)));
        readBuffer.fill(0xee);
        at += n;
      }
      assert.deepEqual(got, sent, `seed round ${round}`);
      assert.equal(assembler.heldBytes, 0);
    }
  });

  it('refuses a frame of an unknown kind or a length beyond the limit', () => {
    const bad = encodeFrame(FrameKind.Data, 1, 1, Buffer.from('x'));
    bad.writeUInt8(9, 4);
    assert.throws(() => new FrameAssembler().push(bad, () => undefined), /unknown kind/);
    const huge = Buffer.alloc(10);
    huge.writeUInt32BE(0xffffffff, 0);
    assert.throws(() => new FrameAssembler().push(huge, () => undefined), /invalid length/);
  });

  it('reads a child’s pipe, taking over a socket that had already read, in order and whole', async () => {
    const frames = Array.from({ length: 300 }, (_, i) =>
      encodeFrame(FrameKind.Data, i, 1, Buffer.alloc(5000, i)),
    );
    // the child writes the frames itself: [u32 length][u8 kind][u32 stream][u8 fd][payload]
    const script = `for (let i = 0; i < ${frames.length}; i++) { const h = Buffer.alloc(10); h.writeUInt32BE(5006, 0); h.writeUInt8(1, 4); h.writeUInt32BE(i, 5); h.writeUInt8(1, 9); process.stdout.write(Buffer.concat([h, Buffer.alloc(5000, i)])); }`;
    const child = spawn(process.execPath, ['-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
    // the socket reads by itself once made: wait until it holds bytes before the reader takes it
    for (let i = 0; i < 400 && child.stdout!.readableLength === 0; i++)
      await new Promise((r) => setTimeout(r, 5));
    assert.ok(child.stdout!.readableLength > 0, 'the socket read ahead');
    const got: number[] = [];
    let broken: string | null = null;
    readFrames(
      child.stdout!,
      (f) => {
        assert.equal(f.payload.length, 5000);
        assert.ok(f.payload.every((b) => b === (f.stream & 0xff)));
        got.push(f.stream);
      },
      (reason) => {
        broken = reason;
      },
    );
    for (let i = 0; i < 1000 && got.length < frames.length; i++) await new Promise((r) => setTimeout(r, 10));
    assert.equal(broken, null);
    assert.deepEqual(
      got,
      frames.map((_, i) => i),
    );
  });

  it('reads any other stream through its data events, and reports a malformed frame once', async () => {
    const source = new PassThrough();
    const got: number[] = [];
    const reasons: string[] = [];
    readFrames(
      source,
      (f) => got.push(f.stream),
      (r) => reasons.push(r),
    );
    source.write(encodeFrame(FrameKind.End, 7, 1, Buffer.alloc(0)));
    const bad = encodeFrame(FrameKind.Data, 8, 1, Buffer.from('x'));
    bad.writeUInt8(42, 4);
    source.write(bad);
    source.write(encodeFrame(FrameKind.End, 9, 1, Buffer.alloc(0)));
    await new Promise((r) => setImmediate(r));
    assert.deepEqual(got, [7]);
    assert.equal(reasons.length, 1);
    assert.match(reasons[0]!, /unknown kind/);
  });
});
