/**
 * A revoked caller's egress: the proxy credentials of its job are withdrawn, so the job's next
 * request through the host proxy is refused (407) while the first one went through, and
 * revokeJob ends the rest (channel, job). A real bwrap computer, the real proxy and audit.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { PaddockError } from '../../src/shared/errors.js';
import type { ClientPrincipal } from '../../src/shared/principal.js';
import type { CallerContext } from '../../src/tools/tool.js';
import { pollUntil } from '../helpers/poll.js';
import { type LocalServer, startServer } from '../unit/net/helpers.js';
import { withEgressComputer } from './egress-fixture.js';

const CLIENT: ClientPrincipal = { kind: 'client', id: 'cl_egress', name: 'Egress Client', computers: [] };
const caller: CallerContext = {
  caller: 'mcp:cl_egress:s1',
  principal: CLIENT,
  via: 'direct',
  attended: true,
};

describe('egress credentials of a revoked caller', { concurrency: false }, () => {
  let stub: LocalServer;
  before(async () => {
    stub = await startServer((req, res) => res.end(`hi ${req.url}`));
  });
  after(async () => {
    await stub.close();
  });
  const policy = () => ({
    http: { allow: [`stub.test:${stub.port}`], hosts: { 'stub.test': '127.0.0.1' } },
  });

  it('withdrawn credentials refuse the job’s next request with 407, after its first one went through', async () => {
    await withEgressComputer({ policy: policy() }, async ({ manager, rows }) => {
      const url = `http://stub.test:${stub.port}`;
      const started = await manager.runCommand({
        script: `curl -sS -o /dev/null -w 'first=%{http_code}\\n' ${url}/a; while [ ! -e /tmp/go ]; do sleep 0.05; done; curl -sS -o /dev/null -w 'second=%{http_code}\\n' ${url}/b`,
        waitMs: 0,
        timeoutMs: 60_000,
        channel: { caller, parentId: 'inv_revoke_1' },
      });
      await pollUntil(
        () => /first=200/.test(manager.readJob(started.jobId, undefined, 65536).stdout),
        'the first request',
        30_000,
      );
      const row = rows().find((r) => r.jobId === started.jobId);
      assert.equal(row?.principal, 'client:cl_egress', 'the connection row names the principal');
      assert.equal(manager.computer?.revokeEgress(started.jobId), true);
      await manager.runCommand({ script: 'touch /tmp/go', waitMs: 10_000, timeoutMs: 10_000 });
      const done = await pollUntil(
        () => {
          const r = manager.readJob(started.jobId, undefined, 65536);
          return r.terminationObserved ? r : null;
        },
        'the job to end',
        30_000,
      );
      assert.match(done.stdout, /second=407/, done.stdout + done.stderr);
    });
  });

  it('revokeJob closes the channel, withdraws the credentials and cancels the job with its family', async () => {
    await withEgressComputer({ policy: policy() }, async ({ manager }) => {
      const started = await manager.runCommand({
        script: 'sleep 60 & sleep 60; wait',
        waitMs: 0,
        timeoutMs: 120_000,
        channel: { caller, parentId: 'inv_revoke_2' },
      });
      const ended = await manager.revokeJob(
        started.jobId,
        new PaddockError('CHANNEL_CLOSED', 'The client was revoked.'),
      );
      assert.ok(ended);
      assert.equal(ended.egress, true);
      assert.ok(['cancelled', 'cancelling'].includes(ended.cancel.status), ended.cancel.status);
      const after = await pollUntil(
        () => {
          const r = manager.readJob(started.jobId, undefined, 1024);
          return r.terminationObserved ? r : null;
        },
        'the cancelled job',
        30_000,
      );
      assert.equal(after.canceled, true);
      assert.equal(manager.computer?.revokeEgress(started.jobId), false, 'nothing left to withdraw');
    });
  });
});
