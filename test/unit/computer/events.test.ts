import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { type ComputerEvent, ComputerEvents } from '../../../src/computer/events.js';
import { silentLogger } from '../../../src/shared/logger.js';

const started: ComputerEvent = {
  type: 'job.started',
  computer: 'private:mcp:a',
  generation: 3,
  jobId: 'g3.job1',
  command: 'echo hi',
};

describe('computer events', () => {
  it('delivers each event to every subscriber, in order, until the subscription is disposed', () => {
    const events = new ComputerEvents(silentLogger());
    const seen: ComputerEvent[] = [];
    const other: string[] = [];
    const sub = events.subscribe((e) => seen.push(e));
    events.subscribe((e) => other.push(e.type));
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
    const events = new ComputerEvents(silentLogger());
    const seen: string[] = [];
    events.subscribe(() => {
      throw new Error('listener bug');
    });
    events.subscribe((e) => seen.push(e.type));
    events.emit(started);
    assert.deepEqual(seen, ['job.started']);
  });
});
