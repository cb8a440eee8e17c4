import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { LineLimiter, type OversizedLine, oversizedReply, requestIdOf } from '../../../src/mcp/line-limit.js';

/** Feeds `chunks` through a limiter of `max` bytes; returns what passed and what was dropped. */
async function run(
  max: number,
  chunks: (string | Buffer)[],
): Promise<{ passed: string; dropped: OversizedLine[] }> {
  const dropped: OversizedLine[] = [];
  const limiter = new LineLimiter(max, (d) => dropped.push(d));
  let passed = '';
  limiter.on('data', (d: Buffer) => {
    passed += d.toString();
  });
  const ended = new Promise((r) => limiter.once('end', r));
  for (const c of chunks) limiter.write(c);
  limiter.end();
  await ended;
  return { passed, dropped };
}

describe('bounded newline-delimited JSON', () => {
  it('passes a line of exactly the limit and drops one byte more, keeping the lines around it', async () => {
    const r = await run(10, ['a'.repeat(10), '\n', 'b'.repeat(11), '\nok\n']);
    assert.equal(r.passed, `${'a'.repeat(10)}\nok\n`);
    assert.deepEqual(r.dropped, [{ bytes: 11, id: null }]);
  });

  it('counts a line split over many chunks, and never holds more than the limit of it', async () => {
    const chunks = [
      '{"jsonrpc":"2.0","id":41,"params":"',
      ...Array.from({ length: 50 }, () => 'x'.repeat(1000)),
      '"}\n',
      '{"id":2}\n',
    ];
    const r = await run(4096, chunks);
    assert.equal(r.passed, '{"id":2}\n');
    assert.equal(r.dropped.length, 1);
    assert.equal(r.dropped[0]?.id, 41, 'the id at the start of the dropped line');
    assert.equal(r.dropped[0]?.bytes, chunks.slice(0, -2).join('').length + 2);
  });

  it('finds the id where the SDK puts it, at the end, and answers that request', async () => {
    const line = `{"method":"tools/call","params":{"x":"${'y'.repeat(5000)}"},"jsonrpc":"2.0","id":"req-7"}`;
    const r = await run(1000, [`${line}\n`]);
    assert.equal(r.dropped[0]?.id, 'req-7');
    const reply = JSON.parse(oversizedReply(r.dropped[0]!, 1000));
    assert.equal(reply.id, 'req-7');
    assert.equal(reply.error.code, -32600);
    assert.match(reply.error.message, /over the limit of 1000 bytes/);
  });

  it('does not take an id from inside the params of a dropped line', () => {
    assert.equal(requestIdOf('{"method":"x","params":{"id":5,', '"z"}}'), null);
    assert.equal(requestIdOf('{"jsonrpc":"2.0","id":3,"method":"x"', ''), 3);
  });

  it('passes several lines of one chunk, skips blank lines, and ends an unterminated last line', async () => {
    const r = await run(100, ['{"a":1}\n\n{"b":2}\n{"c"', ':3}']);
    assert.equal(r.passed, '{"a":1}\n{"b":2}\n{"c":3}\n');
    assert.deepEqual(r.dropped, []);
  });

  it('reports an oversized line that the input ends in the middle of', async () => {
    const r = await run(5, ['0123456789']);
    assert.equal(r.passed, '');
    assert.deepEqual(r.dropped, [{ bytes: 10, id: null }]);
  });
});
