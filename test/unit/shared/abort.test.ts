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
    const late = { error: () => new Error('too late') };
    assert.equal(await raceAbort(Promise.resolve(7), new AbortController().signal, late), 7);
    await assert.rejects(raceAbort(Promise.reject(new Error('own')), undefined, late), /own/);
    await assert.rejects(raceAbort(new Promise(() => undefined), AbortSignal.abort(), late), /too late/);
    const controller = new AbortController();
    const pending = raceAbort(new Promise(() => undefined), controller.signal, late);
    controller.abort();
    await assert.rejects(pending, /too late/);
  });

  it('raceAbort rejects with the signal\u2019s own reason by default, and lets the promise settle within the grace', async () => {
    const controller = new AbortController();
    const pending = raceAbort(new Promise(() => undefined), controller.signal);
    controller.abort(new Error('the reason'));
    await assert.rejects(pending, /the reason/);
    const graced = new AbortController();
    let settle: (v: string) => void = () => undefined;
    const own = raceAbort(new Promise<string>((r) => (settle = r)), graced.signal, { graceMs: 60_000 });
    graced.abort(new Error('aborted'));
    settle('its own answer');
    assert.equal(await own, 'its own answer', 'a promise that settles within the grace wins');
    const ignoring = new AbortController();
    const lateOne = raceAbort(new Promise(() => undefined), ignoring.signal, { graceMs: 1 });
    ignoring.abort(new Error('gave up'));
    await assert.rejects(lateOne, /gave up/);
  });
});
