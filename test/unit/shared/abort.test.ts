import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { raceAbort, sleep } from '../../../src/shared/abort.js';

describe('abortable waits', () => {
  it('sleep answers true after the full wait and false as soon as its signal aborts', async () => {
    assert.equal(await sleep(1), true);
    const controller = new AbortController();
    const waiting = sleep(600_000, controller.signal);
    controller.abort();
    assert.equal(await waiting, false);
    assert.equal(await sleep(600_000, AbortSignal.abort()), false);
  });

  it('raceAbort settles with the promise, or rejects with the caller\u2019s error when the signal aborts first', async () => {
    const late = () => new Error('too late');
    assert.equal(await raceAbort(Promise.resolve(7), new AbortController().signal, late), 7);
    await assert.rejects(raceAbort(Promise.reject(new Error('own')), undefined, late), /own/);
    await assert.rejects(raceAbort(new Promise(() => undefined), AbortSignal.abort(), late), /too late/);
    const controller = new AbortController();
    const pending = raceAbort(new Promise(() => undefined), controller.signal, late);
    controller.abort();
    await assert.rejects(pending, /too late/);
  });
});
