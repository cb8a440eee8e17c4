import assert from 'node:assert/strict';
import { PassThrough } from 'node:stream';
import { describe, test } from 'node:test';
import { MAX_STDERR_LINE_CHARS, StderrLog } from '../../../src/integrations/stderr-log.js';
import { pollUntil } from '../../helpers/poll.js';

describe('StderrLog', () => {
  test('splits chunks into lines, including a multi-byte character cut between chunks', async () => {
    const seen: string[] = [];
    const log = new StderrLog(10, (l) => seen.push(l));
    const stream = new PassThrough();
    log.follow(stream);
    const euro = Buffer.from('€');
    stream.write(Buffer.concat([Buffer.from('first\nsec'), euro.subarray(0, 1)]));
    stream.write(Buffer.concat([euro.subarray(1), Buffer.from('ond\r\n\nthird')]));
    stream.end();
    await pollUntil(() => seen.length === 3, 'three lines');
    assert.deepEqual(seen, ['first', 'sec€ond', 'third']);
    assert.deepEqual(log.snapshot(), ['first', 'sec€ond', 'third']);
  });

  test('keeps only the last lines and cuts a line that never ends', async () => {
    const log = new StderrLog(3, () => {});
    const stream = new PassThrough();
    log.follow(stream);
    stream.write('1\n2\n3\n4\n');
    stream.write('x'.repeat(MAX_STDERR_LINE_CHARS * 3));
    await pollUntil(() => log.snapshot().at(-1)?.startsWith('x'), 'the long line');
    const lines = log.snapshot();
    assert.equal(lines.length, 3);
    assert.ok(lines.every((l) => l.length <= MAX_STDERR_LINE_CHARS + 1));
    stream.end();
  });

  test('markers are kept but not logged, and lastServerLine skips them', () => {
    const logged: string[] = [];
    const log = new StderrLog(5, (l) => logged.push(l));
    log.add('boom', true);
    log.add('[paddock] exited', false);
    assert.deepEqual(logged, ['boom']);
    assert.equal(log.lastServerLine(), 'boom');
  });
});
