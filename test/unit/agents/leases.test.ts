import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { RunLeases } from '../../../src/agents/leases.js';
import type { AgentRun } from '../../../src/agents/types.js';
import { silentLogger } from '../../../src/shared/logger.js';
import { openSqliteStores, type SqliteStores } from '../../../src/store/sqlite/open.js';
import { pollUntil } from '../../helpers/poll.js';
import { newRun } from '../store/fixtures.js';

/** Two servers' stores on one database file (two connections). */
async function withTwoServers(fn: (a: SqliteStores, b: SqliteStores) => Promise<void>) {
  const dir = mkdtempSync(join(tmpdir(), 'paddock-leases-'));
  const file = join(dir, 'paddock.db');
  const a = await openSqliteStores(file, { serverId: 'srv_a', logger: silentLogger() });
  const b = await openSqliteStores(file, { serverId: 'srv_b', logger: silentLogger() });
  try {
    await fn(a, b);
  } finally {
    await a.close();
    await b.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

describe('run leases', () => {
  it('keep a live server’s run going past its first lease, and let another server fail it once renewals stop', () =>
    withTwoServers(async (a, b) => {
      const expiredOn: AgentRun[] = [];
      let active = 1;
      const leasesA = new RunLeases({
        store: a.runs,
        serverId: a.serverId,
        logger: silentLogger(),
        ttlMs: 300,
        renewEveryMs: 50,
        activeRuns: () => active,
        onExpired: () => undefined,
      });
      const leasesB = new RunLeases({
        store: b.runs,
        serverId: b.serverId,
        logger: silentLogger(),
        ttlMs: 300,
        renewEveryMs: 50,
        activeRuns: () => 0,
        onExpired: (run) => expiredOn.push(run),
      });
      const firstLease = leasesA.expiry();
      await a.runs.start(newRun({ id: 'run_a', owner: a.serverId, leaseExpiresAt: firstLease }));
      leasesA.start();
      leasesB.start();
      try {
        // server a renews: its run outlives the first lease, and b leaves it alone
        await pollUntil(async () => {
          const run = await b.runs.get('run_a');
          return run !== undefined && run.leaseExpiresAt! > firstLease + 300 && Date.now() > firstLease + 100;
        }, 'a renewed lease past the first one');
        assert.equal((await b.runs.get('run_a'))?.status, 'running');
        assert.equal(expiredOn.length, 0);
        // server a stops heartbeating (it died): b marks the run failed, once
        leasesA.stop();
        active = 0;
        await pollUntil(() => expiredOn.length > 0, 'the other server to expire the run');
        const run = (await a.runs.get('run_a'))!;
        assert.equal(run.status, 'failed');
        assert.match(run.error ?? '', /srv_a.*lease/);
        assert.deepEqual(
          expiredOn.map((r) => r.id),
          ['run_a'],
        );
        assert.equal(await a.runs.finish('run_a', { status: 'succeeded' }), false);
      } finally {
        leasesA.stop();
        leasesB.stop();
      }
    }));
});
