/** The agent run store's guarantees (runs, leases, schedule claims), for every implementation. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { PaddockError } from '../../../src/shared/errors.js';
import { invocation, newRun, type StoreFactory, withStores } from './fixtures.js';

export function runsContract(factory: StoreFactory): void {
  describe('agent run store', () => {
    it('records a run from start to end once, visible to another connection, and lists newest first', () =>
      withStores(factory, 2, async (a, b) => {
        const first = newRun({ id: 'run_a', owner: 'srv_a', leaseExpiresAt: 9_000 });
        const begun = await a.runs.start(first, 1000);
        assert.equal(begun.status, 'running');
        assert.equal(begun.pid, process.pid);
        assert.equal(begun.owner, 'srv_a');
        assert.equal(begun.leaseExpiresAt, 9_000);
        await a.runs.progress('run_a', 3, 300, 40);
        await a.runs.setWaiting('run_a', 'apr_1');
        assert.equal((await b.runs.get('run_a'))?.waitingApproval, 'apr_1');
        const ended = {
          status: 'succeeded' as const,
          finalAnswer: 'done',
          deliveries: [{ channel: 'ops', ok: true }],
        };
        assert.equal(await a.runs.finish('run_a', ended, 2000), true);
        assert.equal(
          await b.runs.finish('run_a', { status: 'failed', error: 'late' }),
          false,
          'an ended run stays ended',
        );
        await b.runs.start(newRun({ id: 'run_b', agent: 'other' }));
        const run = (await b.runs.get('run_a'))!;
        assert.deepEqual(
          [
            run.status,
            run.turns,
            run.inputTokens,
            run.outputTokens,
            run.finalAnswer,
            run.endedAt,
            run.waitingApproval,
          ],
          ['succeeded', 3, 300, 40, 'done', 2000, null],
        );
        assert.deepEqual(run.skills, first.skills);
        assert.deepEqual(run.deliveries, [{ channel: 'ops', ok: true }]);
        assert.deepEqual(
          (await a.runs.list()).map((r) => r.id),
          ['run_b', 'run_a'],
        );
        assert.deepEqual(
          (await a.runs.list({ agent: 'digest' })).map((r) => r.id),
          ['run_a'],
        );
        assert.deepEqual(
          (await a.runs.list({ status: 'running' })).map((r) => r.id),
          ['run_b'],
        );
        assert.deepEqual(
          (await a.runs.running()).map((r) => r.id),
          ['run_b'],
        );
        assert.equal(await a.runs.agentOf('run_b'), 'other');
        assert.equal(await a.runs.agentOf('run_none'), undefined);
        assert.equal(await a.runs.get('run_none'), undefined);
        await assert.rejects(
          a.runs.list({ limit: 0 }),
          (e: unknown) => e instanceof PaddockError && e.code === 'INVALID_ARGUMENT',
        );
      }));

    it('renews the leases of one owner only, and expires each run whose lease passed exactly once', () =>
      withStores(factory, 2, async (a, b) => {
        await a.runs.start(newRun({ id: 'lease_a', owner: 'srv_a', leaseExpiresAt: 1_000 }));
        await b.runs.start(newRun({ id: 'lease_b', owner: 'srv_b', leaseExpiresAt: 1_000 }));
        await a.runs.start(newRun({ id: 'lease_old' }));
        assert.equal(await a.runs.renewLeases('srv_a', 5_000), 1);
        assert.equal((await b.runs.get('lease_a'))?.leaseExpiresAt, 5_000);
        assert.equal((await b.runs.get('lease_b'))?.leaseExpiresAt, 1_000);
        // both servers sweep at once: each expired run is ended by one of them
        const [fromA, fromB] = await Promise.all([a.runs.expireLeases(2_000), b.runs.expireLeases(2_000)]);
        assert.deepEqual(
          [...fromA, ...fromB].map((r) => r.id),
          ['lease_b'],
        );
        const lost = (await a.runs.get('lease_b'))!;
        assert.equal(lost.status, 'failed');
        assert.equal(lost.errorCode, 'INTERNAL');
        assert.match(lost.error ?? '', /srv_b.*lease/);
        assert.equal((await a.runs.get('lease_a'))?.status, 'running');
        assert.equal(
          (await a.runs.get('lease_old'))?.status,
          'running',
          'a run without a lease is not swept',
        );
        assert.deepEqual(await a.runs.expireLeases(2_000), []);
        assert.equal(
          await b.runs.finish('lease_b', { status: 'succeeded' }),
          false,
          'its server cannot end it now',
        );
        assert.deepEqual(
          (await a.runs.expireLeases(6_000)).map((r) => r.id),
          ['lease_a'],
        );
      }));

    it('lets exactly one of many racing servers claim a tick, and never an older one', () =>
      withStores(factory, 2, async (a, b) => {
        const claims = await Promise.all(
          Array.from({ length: 20 }, (_, i) => (i % 2 ? a : b).runs.claimTick('agent', 'k', 5000)),
        );
        assert.equal(claims.filter(Boolean).length, 1);
        assert.equal(await a.runs.claimTick('agent', 'k', 4000), false);
        assert.equal(await b.runs.claimTick('agent', 'k', 6000), true);
        assert.equal(await a.runs.claimTick('other', 'k', 5000), true);
        assert.equal(await a.runs.lastTick('agent', 'k'), 6000);
        assert.equal(await a.runs.lastTick('agent', 'nope'), undefined);
        await a.runs.setLastTick('agent', 'nope', 7000.9);
        assert.equal(await b.runs.lastTick('agent', 'nope'), 7000);
      }));

    it("lists a run's calls with nested tool-channel calls, in order, with their depth", () =>
      withStores(factory, 1, async ({ runs, audit }) => {
        await runs.start(newRun({ id: 'run_1' }));
        await audit.record(invocation({ id: 'inv_1', parentId: 'run_1', tool: 'save_memory' }));
        await audit.record(invocation({ id: 'inv_2', parentId: 'run_1', tool: 'run_command' }));
        await audit.record(invocation({ id: 'inv_other', parentId: 'run_2', tool: 'save_memory' }));
        await audit.record(invocation({ id: 'inv_3', parentId: 'inv_2', tool: 'github_list_pull_requests' }));
        await audit.record(invocation({ id: 'inv_4', parentId: 'inv_3', tool: 'deeper' }));
        await audit.record(invocation({ id: 'inv_5', parentId: 'run_1', tool: 'notify' }));
        const calls = await runs.calls('run_1');
        assert.deepEqual(
          calls.map((c) => [c.id, c.tool, c.depth]),
          [
            ['inv_1', 'save_memory', 1],
            ['inv_2', 'run_command', 1],
            ['inv_3', 'github_list_pull_requests', 2],
            ['inv_4', 'deeper', 3],
            ['inv_5', 'notify', 1],
          ],
        );
        const { depth: _depth, ...row } = calls[0]!;
        assert.deepEqual(row, await audit.get('inv_1'));
        assert.equal((await runs.calls('run_1', 2)).length, 2);
        assert.deepEqual(await runs.calls('run_none'), []);
      }));
  });
}
