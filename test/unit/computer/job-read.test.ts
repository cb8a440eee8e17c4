import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { decodeJobCursor, encodeJobCursor } from '../../../src/computer/cursors.js';
import { jobId, parseId } from '../../../src/computer/ids.js';
import { Job } from '../../../src/computer/jobs/job.js';
import { isPaddockError } from '../../../src/shared/errors.js';
import { utf8SafeLength } from '../../../src/shared/text.js';

const code = (e: unknown) => (isPaddockError(e) ? e.code : String(e));

describe('job output by cursor', () => {
  it('continues exactly where the previous read stopped, across both streams', () => {
    const job = new Job(jobId(1, 1), 1, 1, 1024);
    job.stdout.append(Buffer.from('out-1 '));
    job.stderr.append(Buffer.from('err-1 '));
    const first = job.read(undefined, 4096);
    assert.equal(first.stdout, 'out-1 ');
    assert.equal(first.stderr, 'err-1 ');
    job.stdout.append(Buffer.from('out-2'));
    const second = job.read(first.nextCursor, 4096);
    assert.equal(second.stdout, 'out-2');
    assert.equal(second.stderr, '');
    assert.equal(second.exitCode, null);
    job.observeExit(0, null);
    assert.equal(job.read(second.nextCursor, 4096).terminationObserved, true);
  });

  it('splits byteLimit fairly so a chatty stdout cannot starve stderr', () => {
    const job = new Job(jobId(1, 1), 1, 1, 1 << 20);
    job.stdout.append(Buffer.alloc(10_000, 'o'));
    job.stderr.append(Buffer.alloc(10_000, 'e'));
    const r = job.read(undefined, 100);
    assert.equal(r.stdout.length, 50);
    assert.equal(r.stderr.length, 50);
    job.stderr.append(Buffer.alloc(0));
    const lopsided = new Job(jobId(1, 2), 1, 2, 1 << 20);
    lopsided.stdout.append(Buffer.alloc(10_000, 'o'));
    lopsided.stderr.append(Buffer.from('e'));
    const l = lopsided.read(undefined, 100);
    assert.equal(l.stdout.length + l.stderr.length, 100);
  });

  it('answers OUTPUT_EXPIRED with the nearest valid oldestCursor when reading behind retention', () => {
    const job = new Job(jobId(2, 5), 2, 5, 8);
    const start = job.read(undefined, 10).nextCursor;
    job.stdout.append(Buffer.from('0123456789abcdef'));
    let caught: unknown;
    try {
      job.read(start, 10);
    } catch (e) {
      caught = e;
    }
    assert.equal(code(caught), 'OUTPUT_EXPIRED');
    const oldest = (caught as { details: { oldestCursor: string } }).details.oldestCursor;
    assert.deepEqual(decodeJobCursor(oldest, 'g2.job5'), { jobId: 'g2.job5', stdout: 8, stderr: 0 });
    assert.equal(job.read(oldest, 100).stdout, '89abcdef');
  });

  it('refuses a cursor from another job and a cursor that is not one', () => {
    const a = new Job(jobId(1, 1), 1, 1, 64);
    const b = new Job(jobId(1, 2), 1, 2, 64);
    assert.throws(
      () => a.read(b.read(undefined, 1).nextCursor, 10),
      (e) => code(e) === 'INVALID_ARGUMENT',
    );
    assert.throws(
      () => a.read('garbage', 10),
      (e) => code(e) === 'INVALID_ARGUMENT',
    );
    assert.throws(
      () => a.read(encodeJobCursor({ jobId: 'g1.job1', stdout: 999, stderr: 0 }), 10),
      (e) => code(e) === 'INVALID_ARGUMENT',
    );
  });

  it('does not end a read inside a UTF-8 sequence unless the stream is over', () => {
    assert.equal(utf8SafeLength(Buffer.from('a€')), 4);
    assert.equal(utf8SafeLength(Buffer.from('a€').subarray(0, 3)), 1);
    assert.equal(
      utf8SafeLength(Buffer.from('😀').subarray(0, 2)),
      2,
      'a lone partial character is returned rather than stalling',
    );
    const job = new Job(jobId(1, 1), 1, 1, 64);
    job.stdout.append(Buffer.from('a€b'));
    const r = job.read(undefined, 3);
    assert.equal(r.stdout, 'a');
    assert.equal(job.read(r.nextCursor, 3).stdout, '€');
  });

  it('parses generation-qualified ids and rejects malformed ones', () => {
    assert.deepEqual(parseId('g3.job12', 'job'), { generation: 3, kind: 'job', n: 12 });
    for (const bad of ['g3.term1', 'job12', 'g0.job1', 'g1.job01', 'g1.job1 ', '../g1.job1']) {
      assert.throws(
        () => parseId(bad, 'job'),
        (e) => code(e) === 'INVALID_ARGUMENT',
        bad,
      );
    }
  });
});
