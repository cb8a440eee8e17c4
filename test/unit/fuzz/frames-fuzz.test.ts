/**
 * Mutated guest frames and tool-channel frames never crash their decoders: a frame decodes, or
 * the decoder refuses it with its own error. Seeds are fixed and printed, so a failure replays
 * with FUZZ_SEED=<seed>; FUZZ_ITERATIONS raises the count (the bench runs 100,000).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { decodeRequest, encodeRequest } from '../../../src/channel/wire.js';
import { ChannelScanner } from '../../../src/guest/channel-scanner.js';
import {
  encodeFrame,
  FRAME_HEADER_BYTES,
  FrameDecoder,
  FrameKind,
  MAX_FRAME_PAYLOAD_BYTES,
} from '../../../src/guest/frames.js';
import type { ChannelFrame } from '../../../src/guest/protocol.js';
import { PaddockError } from '../../../src/shared/errors.js';
import { mutate, random } from '../../helpers/fuzz.js';

const ITERATIONS = Number(process.env.FUZZ_ITERATIONS ?? 3000);
const SEED = Number(process.env.FUZZ_SEED ?? 14_2026);

/** Feeds `data` in random chunks. */
function chunks(data: Buffer, rnd: () => number): Buffer[] {
  const out: Buffer[] = [];
  for (let i = 0; i < data.length; ) {
    const n = 1 + Math.floor(rnd() * 64);
    out.push(data.subarray(i, i + n));
    i += n;
  }
  return out;
}

describe('fuzzing the wire formats', () => {
  it('decodes or refuses every mutated guest frame, with bounded buffering', (t) => {
    t.diagnostic(`seed ${SEED}, ${ITERATIONS} iterations (replay with FUZZ_SEED=${SEED})`);
    const rnd = random(SEED);
    const kinds = Object.values(FrameKind);
    let refused = 0;
    for (let i = 0; i < ITERATIONS; i++) {
      const kind = kinds[Math.floor(rnd() * kinds.length)]!;
      const valid = encodeFrame(
        kind,
        Math.floor(rnd() * 1000),
        Math.floor(rnd() * 3),
        Buffer.from(`{"op":"x","n":${i}}`),
      );
      const decoder = new FrameDecoder();
      try {
        for (const part of chunks(mutate(Buffer.concat([valid, valid]), rnd), rnd)) {
          for (const frame of decoder.push(part)) {
            assert.ok(kinds.includes(frame.kind), `iteration ${i}: a frame of an unknown kind got through`);
            assert.ok(frame.payload.length <= MAX_FRAME_PAYLOAD_BYTES);
          }
          assert.ok(decoder.pendingBytes <= FRAME_HEADER_BYTES + MAX_FRAME_PAYLOAD_BYTES + 64);
        }
      } catch (e) {
        assert.ok(e instanceof RangeError, `iteration ${i} (seed ${SEED}): ${(e as Error).stack}`);
        refused++;
      }
    }
    assert.ok(refused > 0, 'some mutations are refused (the fuzzer reaches the checks)');
  });

  it('scans mutated tool-channel frames into requests, oversized or malformed frames, and text', (t) => {
    const seed = SEED + 1;
    t.diagnostic(`seed ${seed}, ${ITERATIONS} iterations (replay with FUZZ_SEED=${SEED})`);
    const rnd = random(seed);
    const nonce = 'n0nce';
    const seen = { request: 0, malformed: 0, decoded: 0, decodedBad: 0 };
    for (let i = 0; i < ITERATIONS; i++) {
      const payload = encodeRequest({
        v: 1,
        op: 'call',
        name: 'save_memory',
        args: { content: `note ${i}` },
      });
      const frame = Buffer.from(`text before\x1b_paddock;${nonce};c${i};${payload}\x1b\\text after`);
      const found: ChannelFrame[] = [];
      const scanner = new ChannelScanner(nonce, (f) => found.push(f), 4096);
      const input = mutate(frame, rnd);
      let passed = 0;
      for (const part of chunks(input, rnd)) passed += scanner.push(part).length;
      assert.ok(passed <= input.length, `iteration ${i}: the scanner invented output`);
      for (const f of found) {
        if (f.kind !== 'request') {
          seen.malformed++;
          continue;
        }
        seen.request++;
        try {
          decodeRequest(f.payload);
          seen.decoded++;
        } catch (e) {
          assert.ok(
            e instanceof PaddockError && e.code === 'INVALID_ARGUMENT',
            `iteration ${i}: ${(e as Error).stack}`,
          );
          seen.decodedBad++;
        }
      }
    }
    assert.ok(seen.decoded > 0 && seen.decodedBad + seen.malformed > 0, JSON.stringify(seen));
  });
});
