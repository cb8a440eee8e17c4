import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { type ComputerEvent, computerEvents } from '../../../src/computer/events.js';
import { Emitter } from '../../../src/shared/emitter.js';
import { silentLogger } from '../../../src/shared/logger.js';

const started: ComputerEvent = {
  type: 'job.started',
  computer: 'private:mcp:a',
  generation: 3,
  jobId: 'g3.job1',
  command: 'echo hi',
};

describe('the emitter (computer events are one)', () => {
  it('delivers each event to every subscriber, in order, until the subscription is disposed', () => {
    const events = computerEvents(silentLogger());
    const seen: ComputerEvent[] = [];
    const other: string[] = [];
    const sub = events.on((e) => seen.push(e));
    events.on((e) => other.push(e.type));
    events.emit(started);
    events.emit({ ...started, type: 'job.output', fd: 'stdout', bytes: 3 } as ComputerEvent);
    sub.dispose();
    events.emit(started);
    assert.deepEqual(
      seen.map((e) => e.type),
      ['job.started', 'job.output'],
    );
    assert.deepEqual(seen[0], started);
    assert.deepEqual(other, ['job.started', 'job.output', 'job.started']);
  });

  it('keeps delivering to the other subscribers when one throws', () => {
    const events = computerEvents(silentLogger());
    const seen: string[] = [];
    events.on(() => {
      throw new Error('listener bug');
    });
    events.on((e) => seen.push(e.type));
    events.emit(started);
    assert.deepEqual(seen, ['job.started']);
  });

  it('counts each subscription of the same function apart, and reports a throwing listener to its error handler', () => {
    const errors: string[] = [];
    const emitter = new Emitter<number>((e, value) => errors.push(`${(e as Error).message} at ${value}`));
    const seen: number[] = [];
    const listener = (n: number) => {
      seen.push(n);
      if (n === 2) throw new Error('two');
    };
    const first = emitter.on(listener);
    emitter.on(listener);
    assert.equal(emitter.size, 2);
    emitter.emit(1);
    first.dispose();
    first.dispose();
    emitter.emit(2);
    assert.deepEqual(seen, [1, 1, 2]);
    assert.deepEqual(errors, ['two at 2']);
    assert.equal(emitter.size, 1);
  });
});
