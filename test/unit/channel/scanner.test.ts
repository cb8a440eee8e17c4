import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ChannelScanner } from '../../../src/guest/channel-scanner.js';
import type { ChannelFrame } from '../../../src/guest/protocol.js';

const NONCE = 'n0nceABC_-1';
const frame = (nonce: string, id: string, payload: string) => `\x1b_paddock;${nonce};${id};${payload}\x1b\\`;

/** Feeds `input` split at the given sizes; returns the passthrough text and the frames. */
function scan(
  input: string | Buffer,
  split: number[] = [],
  max?: number,
): { out: Buffer; frames: ChannelFrame[] } {
  const frames: ChannelFrame[] = [];
  const sc = new ChannelScanner(NONCE, (f) => frames.push(f), max);
  const bytes = Buffer.isBuffer(input) ? input : Buffer.from(input);
  const parts: Buffer[] = [];
  let at = 0;
  for (const n of split) {
    parts.push(sc.push(bytes.subarray(at, at + n)));
    at += n;
  }
  parts.push(sc.push(bytes.subarray(at)));
  parts.push(sc.end());
  return { out: Buffer.concat(parts), frames };
}

describe('tool channel frame scanner (guest side)', () => {
  it('takes a frame with the job nonce out of stderr and keeps the text around it', () => {
    const { out, frames } = scan(`before\n${frame(NONCE, 'r1', 'eyJvcCI6Imxpc3QifQ')}after\n`);
    assert.equal(out.toString(), 'before\nafter\n');
    assert.deepEqual(frames, [{ kind: 'request', id: 'r1', payload: 'eyJvcCI6Imxpc3QifQ' }]);
  });

  it('finds the same frame wherever the stream is cut into chunks', () => {
    const text = `a\x1b[31mred\x1b[0m${frame(NONCE, 'abc', 'AAAA-_zz')}b`;
    for (let cut = 0; cut <= text.length; cut++) {
      const { out, frames } = scan(text, [cut]);
      assert.equal(out.toString(), 'a\x1b[31mred\x1b[0mb', `cut at ${cut}`);
      assert.equal(frames.length, 1, `cut at ${cut}`);
    }
    const oneByOne = scan(
      text,
      Array.from({ length: text.length }, () => 1),
    );
    assert.equal(oneByOne.out.toString(), 'a\x1b[31mred\x1b[0mb');
    assert.equal(oneByOne.frames.length, 1);
  });

  it('takes a frame whose payload is the JSON itself (the sh client), UTF-8 and newlines included, wherever it is cut', () => {
    const json = '{"v":1,"op":"call","name":"x","args":{"t":"été;\\n ok",\n"n":1}}';
    const text = `a${frame(NONCE, 'sh-1', json)}b`;
    for (let cut = 0; cut <= Buffer.byteLength(text); cut++) {
      const { out, frames } = scan(text, [cut]);
      assert.equal(out.toString(), 'ab', `cut at ${cut}`);
      assert.equal(frames.length, 1, `cut at ${cut}`);
      const f = frames[0]!;
      assert.ok(f.kind === 'request', `cut at ${cut}`);
      assert.equal(Buffer.from(f.payload, 'latin1').toString('utf8'), json);
    }
    const broken = scan(frame(NONCE, 'sh-2', '{"a":"\x1bx"}'));
    assert.equal(broken.frames[0]?.kind, 'malformed', 'an ESC inside the JSON breaks the frame');
  });

  it('leaves a frame with another nonce (a replayed or foreign frame) as ordinary output, byte for byte', () => {
    const foreign = frame('someoneElse', 'r1', 'eyJvcCI6Imxpc3QifQ');
    for (let cut = 0; cut <= foreign.length; cut++) {
      const { out, frames } = scan(`x${foreign}y`, [cut]);
      assert.equal(out.toString(), `x${foreign}y`, `cut at ${cut}`);
      assert.equal(frames.length, 0);
    }
  });

  it('leaves a nonce that is a prefix of the real one as ordinary output', () => {
    const almost = frame(NONCE.slice(0, -1), 'r1', 'AA');
    const { out, frames } = scan(almost);
    assert.equal(out.toString(), almost);
    assert.equal(frames.length, 0);
  });

  it('passes plain escape sequences and binary bytes through untouched', () => {
    const bin = Buffer.from([0x00, 0x1b, 0x5f, 0x70, 0x1b, 0x1b, 0xff, 0x1b]);
    const { out, frames } = scan(bin, [3, 1]);
    assert.deepEqual(out, bin);
    assert.equal(frames.length, 0);
  });

  it('reports an oversized frame without buffering it and resumes after its end', () => {
    const big = 'A'.repeat(5000);
    const { out, frames } = scan(`x${frame(NONCE, 'big1', big)}y`, [100, 1000, 2000], 4096);
    assert.equal(out.toString(), 'xy');
    assert.deepEqual(frames, [{ kind: 'oversized', id: 'big1' }]);
  });

  it('reports a frame whose payload is not base64url as malformed, keeping its id for the reply', () => {
    const { out, frames } = scan(`${frame(NONCE, 'm1', 'not base64!')}z`);
    assert.equal(out.toString(), 'z');
    assert.equal(frames[0]?.kind, 'malformed');
    assert.equal(frames[0]?.kind === 'malformed' && frames[0].id, 'm1');
  });

  it('reports a frame cut off by the end of the stream', () => {
    const { frames } = scan(`\x1b_paddock;${NONCE};r9;AAAA`);
    assert.equal(frames[0]?.kind, 'malformed');
  });

  it('keeps several frames and text in order', () => {
    const text = `1${frame(NONCE, 'a', 'QQ')}2${frame(NONCE, 'b', 'Qg')}3`;
    const { out, frames } = scan(text, [7, 9]);
    assert.equal(out.toString(), '123');
    assert.deepEqual(
      frames.map((f) => (f.kind === 'request' ? f.id : f.kind)),
      ['a', 'b'],
    );
  });
});
