/** How both stores name the checkpoint taken before an approved call: in its audit row and its approval. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { ApprovalEnd } from '../../../src/store/approvals.js';
import { approvalRequest, invocation, type StoreFactory, started, withStores } from './fixtures.js';

const approved: ApprovalEnd = {
  status: 'approved',
  by: 'cli',
  via: 'cli',
  reason: null,
  scope: 'once',
  at: 5000,
};

export function checkpointsContract(factory: StoreFactory): void {
  describe('checkpoints named by audit rows and approvals', () => {
    it('keeps the checkpoint a running row began with through its end, for every connection and query', () =>
      withStores(factory, 2, async (a, b) => {
        const start = started({ tool: 'run_command', approvalId: 'apr_1', checkpointId: 'ck_1' });
        const begun = await a.audit.begin(start);
        assert.equal(begun.checkpointId, 'ck_1');
        const done = await b.audit.complete(start.id, { durationMs: 3, outputBytes: 1, success: true });
        assert.equal(done.checkpointId, 'ck_1', 'the end keeps the lineage the call began with');
        assert.deepEqual(await a.audit.get(start.id), done);
        const queried = (await a.audit.query({ tool: 'run_command' })).find((r) => r.id === start.id);
        assert.equal(queried?.checkpointId, 'ck_1');
        const followed = (await b.audit.ended(0)).find((r) => r.id === start.id);
        assert.equal(followed?.checkpointId, 'ck_1');
        const plain = await a.audit.record(invocation());
        assert.equal(plain.checkpointId, null, 'a row without a checkpoint stores null');
        assert.deepEqual(await b.audit.get(plain.id), plain);
      }));

    it("names the checkpoint on an approved approval once, and only for the approval's own call", () =>
      withStores(factory, 2, async (a, b) => {
        const request = approvalRequest();
        const pending = await a.approvals.insert(request);
        assert.equal(pending.checkpointId, null);
        assert.equal(
          await a.approvals.setCheckpoint(request.id, request.invocationId, 'ck_early'),
          undefined,
          'a pending approval let nothing run yet',
        );
        await a.approvals.end(request.id, approved);
        assert.equal(
          await b.approvals.setCheckpoint(request.id, 'inv_a_later_call', 'ck_other'),
          undefined,
          'a later call that a session grant let run does not rename it',
        );
        const named = await b.approvals.setCheckpoint(request.id, request.invocationId, 'ck_1');
        assert.equal(named?.checkpointId, 'ck_1');
        assert.equal(
          await a.approvals.setCheckpoint(request.id, request.invocationId, 'ck_2'),
          undefined,
          'it is set once',
        );
        assert.equal((await a.approvals.get(request.id))?.checkpointId, 'ck_1');
        assert.equal((await a.approvals.list()).find((x) => x.id === request.id)?.checkpointId, 'ck_1');
        const denied = await a.approvals.insert(approvalRequest());
        await a.approvals.end(denied.id, { ...approved, status: 'denied', scope: null });
        assert.equal(
          await a.approvals.setCheckpoint(denied.id, denied.invocationId, 'ck_3'),
          undefined,
          'a denied call never ran, so nothing undoes it',
        );
        assert.equal((await b.approvals.get(denied.id))?.checkpointId, null);
      }));
  });
}
