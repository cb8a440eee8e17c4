import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  encodeFrame,
  encodeFrameHeader,
  FRAME_HEADER_BYTES,
  FrameDecoder,
  FrameKind,
  MAX_FRAME_PAYLOAD_BYTES,
} from '../../../src/guest/frames.js';

describe('guest link frames', () => {
  it('decodes frames split at every byte boundary, binary payloads intact', () => {
    const payload = Buffer.from([0, 255, 10, 13, 0x1b, 0xc3]);
    const wire = Buffer.concat([
      encodeFrame(FrameKind.Data, 7, 2, payload),
      encodeFrame(FrameKind.Control, 0, 0, Buffer.from('{"t":"hello"}')),
      encodeFrame(FrameKind.End, 7, 2, Buffer.alloc(0)),
    ]);
    for (let cut = 0; cut <= wire.length; cut++) {
      const d = new FrameDecoder();
      const frames = [...d.push(wire.subarray(0, cut)), ...d.push(wire.subarray(cut))];
      assert.equal(frames.length, 3, `cut at ${cut}`);
      assert.deepEqual([...frames[0]!.payload], [...payload]);
      assert.equal(frames[0]!.stream, 7);
      assert.equal(frames[0]!.fd, 2);
      assert.equal(frames[1]!.payload.toString(), '{"t":"hello"}');
      assert.equal(frames[2]!.kind, FrameKind.End);
      assert.equal(d.pendingBytes, 0);
    }
  });

  it('reassembles a large frame delivered in many small chunks', () => {
    const payload = Buffer.alloc(300_000, 7);
    const wire = encodeFrame(FrameKind.Data, 1, 1, payload);
    const d = new FrameDecoder();
    const frames = [];
    for (let i = 0; i < wire.length; i += 1000) frames.push(...d.push(wire.subarray(i, i + 1000)));
    assert.equal(frames.length, 1);
    assert.equal(frames[0]!.payload.length, payload.length);
    assert.ok(frames[0]!.payload.equals(payload));
  });

  it('rejects a frame that announces more than the maximum payload, before buffering it', () => {
    const header = Buffer.alloc(FRAME_HEADER_BYTES);
    header.writeUInt32BE(MAX_FRAME_PAYLOAD_BYTES + FRAME_HEADER_BYTES, 0);
    header.writeUInt8(FrameKind.Data, 4);
    assert.throws(() => new FrameDecoder().push(header), /invalid length/);
    assert.throws(() => encodeFrameHeader(FrameKind.Data, 1, 1, MAX_FRAME_PAYLOAD_BYTES + 1), RangeError);
  });

  it('rejects a frame of an unknown kind', () => {
    const frame = encodeFrame(FrameKind.Data, 1, 1, Buffer.from('x'));
    frame.writeUInt8(99, 4);
    assert.throws(() => new FrameDecoder().push(frame), /unknown kind/);
  });
});
