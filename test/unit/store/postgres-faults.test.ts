// The PostgreSQL stores against a real throwaway cluster: what only a shared database has to get
// right (one migration among servers starting together, end seqs a follower never skips, one
// winner of a tick or a lease) and every fault named with what to do.
import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { PaddockError } from '../../../src/shared/errors.js';
import { silentLogger } from '../../../src/shared/logger.js';
import type { InvocationRecord } from '../../../src/store/audit.js';
import { PG_MIGRATIONS } from '../../../src/store/postgres/migrations.js';
import { openPostgresStores } from '../../../src/store/postgres/open.js';
import type { Stores } from '../../../src/store/stores.js';
import { type PgCluster, startPostgres } from '../../helpers/postgres.js';

let cluster: PgCluster;
let databases = 0;

before(async () => {
  cluster = await startPostgres();
});
after(async () => {
  await cluster?.cleanup();
});

/** A fresh database of the cluster, for one test. */
async function freshDatabase(): Promise<string> {
  databases++;
  return cluster.createDatabase(`faults_${process.pid}_${databases}`);
}

function open(url: string, serverId = 'srv-a', password: string | undefined = cluster.password) {
  return openPostgresStores(url, password, { serverId, logger: silentLogger(), feedIntervalMs: 50 });
}

async function withStores(count: number, fn: (stores: Stores[]) => Promise<void>): Promise<void> {
  const url = await freshDatabase();
  const stores = await Promise.all(Array.from({ length: count }, (_, i) => open(url, `srv-${i}`)));
  try {
    await fn(stores);
  } finally {
    await Promise.all(stores.map((s) => s.close()));
  }
}

let counter = 0;
function invocation(overrides: Partial<InvocationRecord> = {}): InvocationRecord {
  counter++;
  return {
    id: `inv_pg_${counter}`,
    startedAt: 1_700_000_000_000 + counter,
    durationMs: 1,
    tool: 'read_file',
    source: 'builtin',
    caller: 'cli',
    via: 'direct',
    input: { path: '/ws/a.txt' },
    outputBytes: 1,
    success: true,
    ...overrides,
  };
}

async function rejectsWith(promise: Promise<unknown>, pattern: RegExp): Promise<PaddockError> {
  try {
    await promise;
  } catch (e) {
    assert.ok(e instanceof PaddockError, `expected a PaddockError, got ${String(e)}`);
    assert.match(e.message, pattern);
    return e;
  }
  assert.fail(`expected a rejection matching ${pattern}`);
}

function closedPort(): Promise<number> {
  return new Promise((resolve) => {
    const server = createServer().listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => resolve(typeof address === 'object' && address ? address.port : 1));
    });
  });
}

describe('PostgreSQL stores: migrations', () => {
  it('four servers opening one new database at once migrate it exactly once, and all of them work', async () => {
    await withStores(4, async (stores) => {
      const ledger = await cluster.admin<{ version: number }>(
        'SELECT version FROM schema_migrations ORDER BY version',
        [],
        `faults_${process.pid}_${databases}`,
      );
      assert.deepEqual(
        ledger.map((r) => Number(r.version)),
        PG_MIGRATIONS.map((m) => m.version),
      );
      for (const [i, s] of stores.entries()) await s.audit.record(invocation({ caller: `srv-${i}` }));
      assert.equal((await stores[0]!.audit.query({ limit: 10 })).length, 4);
    });
  });

  it('refuses to start on a database a newer Paddock migrated, naming its schema version', async () => {
    const url = await freshDatabase();
    await (await open(url)).close();
    const name = `faults_${process.pid}_${databases}`;
    await cluster.admin(
      `INSERT INTO schema_migrations (version, name, applied_at) VALUES (${PG_MIGRATIONS.length + 1}, 'from_the_future', 0)`,
      [],
      name,
    );
    const e = await rejectsWith(
      open(url),
      new RegExp(
        `migrated by a newer Paddock \\(schema version ${PG_MIGRATIONS.length + 1}.*Upgrade this server`,
      ),
    );
    assert.equal(e.details.startup, true);
  });
});

describe('PostgreSQL stores: faults at start', () => {
  it('an unreachable database is named with its address and what to check', async () => {
    const port = await closedPort();
    const e = await rejectsWith(
      open(`postgres://paddock@127.0.0.1:${port}/paddock`),
      new RegExp(`Cannot reach the PostgreSQL database "paddock" at 127\\.0\\.0\\.1:${port}.*server runs`),
    );
    assert.equal(e.details.startup, true);
  });

  it('a wrong password says to set PADDOCK_STORE_PASSWORD', async () => {
    const e = await rejectsWith(
      open(cluster.url, 'srv-a', 'not-the-password'),
      /refused the password.*PADDOCK_STORE_PASSWORD/,
    );
    assert.equal(e.details.startup, true);
    assert.doesNotMatch(e.message, new RegExp(cluster.password));
  });

  it('a missing password says where to give one', async () => {
    const env = process.env.PGPASSWORD;
    delete process.env.PGPASSWORD;
    try {
      const noPassword = openPostgresStores(cluster.url, undefined, {
        serverId: 'srv-a',
        logger: silentLogger(),
      });
      await rejectsWith(noPassword, /asks for a password.*PADDOCK_STORE_PASSWORD.*passwordFile/);
    } finally {
      if (env !== undefined) process.env.PGPASSWORD = env;
    }
  });

  it('a missing database says how to create it', async () => {
    await rejectsWith(
      open(cluster.url.replace(/\/paddock$/, '/no_such_db')),
      /database "no_such_db".*does not exist\. Create it \(CREATE DATABASE "no_such_db" OWNER "paddock"\)/,
    );
  });
});

describe('PostgreSQL stores: a fleet sharing one database', () => {
  it('a follower paging by end seq sees every row two servers write at once, each once, in a rising order', async () => {
    await withStores(2, async ([a, b]) => {
      const written = new Set<string>();
      const writer = async (stores: Stores, n: number) => {
        for (let i = 0; i < n; i++) {
          if (i % 3 === 0) {
            const row = invocation();
            await stores.audit.begin(row);
            await stores.audit.complete(row.id, { durationMs: 2, outputBytes: 0, success: true });
            written.add(row.id);
          } else {
            const row = await stores.audit.record(invocation());
            written.add(row.id);
          }
        }
      };
      const seen: string[] = [];
      const endSeqs: number[] = [];
      let cursor = 0;
      let writing = true;
      const follower = (async () => {
        for (;;) {
          // read `writing` before the page: a page read while the last write committed may miss it
          const lastPage = !writing;
          const rows = await b!.audit.ended(cursor, 7);
          for (const r of rows) {
            seen.push(r.id);
            endSeqs.push(r.endSeq as number);
            cursor = r.endSeq as number;
          }
          if (lastPage && rows.length === 0) return;
        }
      })();
      await Promise.all([writer(a!, 150), writer(a!, 150), writer(b!, 150), writer(b!, 150)]);
      writing = false;
      await follower;
      assert.equal(new Set(seen).size, seen.length, 'a row was delivered twice');
      assert.deepEqual(new Set(seen), written);
      assert.ok(endSeqs.every((s, i) => i === 0 || s > (endSeqs[i - 1] as number)));
    });
  });

  it('a subscriber on one server receives the rows another server writes', async () => {
    await withStores(2, async ([a, b]) => {
      const got: string[] = [];
      const sub = a!.audit.subscribe((row) => got.push(row.id));
      try {
        // the subscription starts from the end of the log: wait until it has looked once
        await new Promise((r) => setTimeout(r, 200));
        const row = await b!.audit.record(invocation({ caller: 'mcp:other-server' }));
        const deadline = Date.now() + 10_000;
        while (!got.includes(row.id) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 25));
        assert.deepEqual(got, [row.id]);
      } finally {
        sub.dispose();
      }
    });
  });

  it('of eight claims of one tick from two servers at once exactly one wins; an older tick then loses', async () => {
    await withStores(2, async ([a, b]) => {
      const at = 1_800_000_000_000;
      const claims = await Promise.all(
        Array.from({ length: 8 }, (_, i) => (i % 2 ? a! : b!).runs.claimTick('digest', '* * * * *', at)),
      );
      assert.equal(claims.filter(Boolean).length, 1);
      assert.equal(await a!.runs.claimTick('digest', '* * * * *', at - 60_000), false);
      assert.equal(await b!.runs.claimTick('digest', '* * * * *', at + 60_000), true);
      assert.equal(await a!.runs.lastTick('digest', '* * * * *'), at + 60_000);
    });
  });

  it('a run whose lease passed is marked failed once, by one of two servers sweeping together', async () => {
    await withStores(2, async ([a, b]) => {
      const now = Date.now();
      await a!.runs.start({
        id: 'run_lease',
        agent: 'digest',
        trigger: 'schedule',
        provider: 'openai',
        model: 'm',
        skills: [],
        owner: 'srv-dead',
        leaseExpiresAt: now - 1,
      });
      await a!.runs.start({
        id: 'run_alive',
        agent: 'digest',
        trigger: 'manual',
        provider: 'openai',
        model: 'm',
        skills: [],
        owner: 'srv-0',
        leaseExpiresAt: now + 60_000,
      });
      const [x, y] = await Promise.all([a!.runs.expireLeases(now), b!.runs.expireLeases(now)]);
      assert.deepEqual(
        [...x!, ...y!].map((r) => r.id),
        ['run_lease'],
      );
      const run = await b!.runs.get('run_lease');
      assert.equal(run?.status, 'failed');
      assert.match(run?.error ?? '', /srv-dead.*stopped renewing its lease/);
      assert.equal((await a!.runs.get('run_alive'))?.status, 'running');
    });
  });

  it('reconcile marks only this host’s dead calls interrupted, never another host’s', async () => {
    await withStores(1, async ([a]) => {
      const name = `faults_${process.pid}_${databases}`;
      await a!.audit.begin(invocation({ id: 'inv_here' }));
      await a!.audit.begin(invocation({ id: 'inv_elsewhere' }));
      await cluster.admin("UPDATE tool_invocations SET owner_pid = 999999 WHERE id = 'inv_here'", [], name);
      await cluster.admin(
        "UPDATE tool_invocations SET owner_pid = 999999, owner_host = 'another-host/0' WHERE id = 'inv_elsewhere'",
        [],
        name,
      );
      assert.equal(await a!.audit.reconcile(() => false), 1);
      assert.equal((await a!.audit.get('inv_here'))?.state, 'interrupted');
      assert.equal((await a!.audit.get('inv_elsewhere'))?.state, 'running');
    });
  });
});

describe('PostgreSQL stores: the database going away while the server runs', () => {
  it('a call’s audit write fails with INTERNAL saying the audit store is unavailable, and works again once it is back', async () => {
    await withStores(1, async ([a]) => {
      await a!.audit.record(invocation());
      await cluster.stop();
      try {
        const e = await rejectsWith(a!.audit.record(invocation()), /The audit store is unavailable/);
        assert.equal(e.code, 'INTERNAL');
        await rejectsWith(a!.memory.save('ns', 'a note'), /The memory store is unavailable/);
      } finally {
        await cluster.start();
      }
      const row = await a!.audit.record(invocation({ tool: 'after_restart' }));
      assert.equal((await a!.audit.get(row.id))?.tool, 'after_restart');
    });
  });
});
