/**
 * The stores on SQLite and on PostgreSQL, from one run: audit rows written per second (one
 * writer, and eight calls in flight as a busy server has) and the latency of a memory recall
 * over a few thousand notes. PostgreSQL is a throwaway local cluster with its default
 * durability (every commit flushed); SQLite runs with the server's settings (WAL, NORMAL).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { silentLogger } from '../src/shared/logger.js';
import type { InvocationRecord } from '../src/store/audit.js';
import { chainLink, contentDigest } from '../src/store/audit-chain.js';
import { openStores } from '../src/store/open.js';
import { SqliteAuditStore } from '../src/store/sqlite/audit-store.js';
import { openDatabase } from '../src/store/sqlite/database.js';
import type { Stores } from '../src/store/stores.js';
import { startPostgres } from '../test/helpers/postgres.js';
import type { Figure } from './run.js';
import { median, timeCalls } from './stats.js';

const ROWS = 2_000;
const IN_FLIGHT = 8;
const NOTES = 3_000;
const RECALLS = 300;

/** 200 words: a note of 12 words and a query of 2 match a few hundred of 3,000 notes, not most. */
const WORDS =
  'deploy database backup schedule digest release branch invoice customer ticket outage latency cache index queue worker token review budget migration'
    .split(' ')
    .flatMap((w) =>
      ['', 's', 'ed', 'er', 'ing', 'al', 'ly', 'ion', 'ive', 'ment'].map((suffix) => `${w}${suffix}`),
    );

let counter = 0;
function row(): InvocationRecord {
  counter++;
  return {
    id: `inv_bench_${process.pid}_${counter}`,
    startedAt: Date.now(),
    durationMs: 1.5,
    tool: 'read_file',
    source: 'builtin',
    caller: 'mcp:bench',
    via: 'direct',
    input: { path: `/workspace/src/file-${counter}.ts`, offset: 0 },
    outputBytes: 512,
    success: true,
  };
}

/** Rows per second with `inFlight` writes outstanding at a time. */
async function auditRate(stores: Pick<Stores, 'audit'>, inFlight: number): Promise<number> {
  for (let i = 0; i < 100; i++) await stores.audit.record(row());
  let left = ROWS;
  const start = performance.now();
  await Promise.all(
    Array.from({ length: inFlight }, async () => {
      while (left-- > 0) await stores.audit.record(row());
    }),
  );
  return ROWS / ((performance.now() - start) / 1000);
}

/** Rows per second of `a` and `b`, each the median of 8 turns of 500 rows taken in turn (a, b, b, a, …). */
async function ratesInTurns(
  a: Pick<Stores, 'audit'>,
  b: Pick<Stores, 'audit'>,
  inFlight: number,
): Promise<[number, number]> {
  const rate = async (s: Pick<Stores, 'audit'>) => {
    let left = 500;
    const start = performance.now();
    await Promise.all(
      Array.from({ length: inFlight }, async () => {
        while (left-- > 0) await s.audit.record(row());
      }),
    );
    return 500 / ((performance.now() - start) / 1000);
  };
  for (let i = 0; i < 100; i++) await Promise.all([a.audit.record(row()), b.audit.record(row())]);
  const ra: number[] = [];
  const rb: number[] = [];
  for (let turn = 0; turn < 8; turn++) {
    if (turn % 2 === 0) {
      ra.push(await rate(a));
      rb.push(await rate(b));
    } else {
      rb.push(await rate(b));
      ra.push(await rate(a));
    }
  }
  return [median(ra), median(rb)];
}

/** Median milliseconds of a recall of two words, top 10, over NOTES notes in the namespace. */
async function recallMs(stores: Stores): Promise<number> {
  let seed = 7;
  const pick = () => {
    seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
    return WORDS[(seed >>> 12) % WORDS.length] as string;
  };
  for (let i = 0; i < NOTES; i++) {
    const words = Array.from({ length: 12 }, pick).join(' ');
    await stores.memory.save('agent:bench', `Note ${i}: ${words}.`, [pick(), pick()]);
  }
  return median(
    await timeCalls(RECALLS, () => stores.memory.recall('agent:bench', `${pick()} ${pick()}`, 10), 50),
  );
}

async function measure(stores: Stores) {
  return {
    one: await auditRate(stores, 1),
    many: await auditRate(stores, IN_FLIGHT),
    recall: await recallMs(stores),
  };
}

export async function benchStores(): Promise<Figure[]> {
  const dir = mkdtempSync(join(tmpdir(), 'paddock-bench-stores-'));
  const cluster = await startPostgres({ durable: true });
  try {
    const sqlite = await openStores(undefined, { dataDir: dir, logger: silentLogger() });
    const onSqlite = await measure(sqlite).finally(() => sqlite.close());
    // what the chain costs a row: a chained and an unhashed store, measured in turns
    const chainedDb = openDatabase(join(dir, 'chained.db'));
    const plainDb = openDatabase(join(dir, 'unchained.db'));
    const chained = { audit: new SqliteAuditStore(chainedDb) };
    const plain = { audit: new SqliteAuditStore(plainDb, { hashChain: false }) };
    const [chainedOne, unchainedOne] = await ratesInTurns(chained, plain, 1);
    const [chainedMany, unchainedMany] = await ratesInTurns(chained, plain, IN_FLIGHT);
    const unchained = { one: unchainedOne, many: unchainedMany };
    chainedDb.close();
    plainDb.close();
    // the chain's own work per row (content digest and link), beside a whole row's write
    const sample = {
      ...row(),
      input: JSON.stringify(row().input),
      inputSha256: null,
      state: 'ended' as const,
    };
    const hashing = await timeCalls(
      20_000,
      async () => chainLink('0'.repeat(64), 1, contentDigest(sample)),
      2000,
    );
    const pg = await openStores(
      { url: cluster.url },
      {
        dataDir: dir,
        logger: silentLogger(),
        env: { PADDOCK_STORE_PASSWORD: cluster.password },
      },
    );
    const onPg = await measure(pg).finally(() => pg.close());
    return [
      {
        name: 'audit rows written, one writer (PostgreSQL)',
        value: onPg.one,
        unit: 'rows/s',
        target: 'each row committed before the call is answered',
        peers: [{ name: 'SQLite (WAL, NORMAL)', value: onSqlite.one }],
      },
      {
        name: `audit rows written, ${IN_FLIGHT} in flight (PostgreSQL)`,
        value: onPg.many,
        unit: 'rows/s',
        target: 'end seqs serialised across the fleet',
        peers: [{ name: 'SQLite (WAL, NORMAL)', value: onSqlite.many }],
      },
      {
        name: 'audit rows written, one writer (SQLite, hash-chained, median of 8 turns)',
        value: chainedOne,
        unit: 'rows/s',
        target: 'the chain costs little beside the commit',
        peers: [{ name: 'SQLite, rows not hashed', value: unchained.one }],
      },
      {
        name: `audit rows written, ${IN_FLIGHT} in flight (SQLite, hash-chained, median of 8 turns)`,
        value: chainedMany,
        unit: 'rows/s',
        target: 'group commit keeps its speed',
        peers: [{ name: 'SQLite, rows not hashed', value: unchained.many }],
      },
      {
        name: 'chain link of one audit row (content digest and link), median',
        value: median(hashing) * 1000,
        unit: 'µs/row',
        target: 'a sliver of a row’s write',
        peers: [{ name: 'one row written (SQLite, one writer), in µs', value: 1e6 / chainedOne }],
      },
      {
        name: `recall_memory over ${NOTES.toLocaleString('en-US')} notes, median (PostgreSQL)`,
        value: onPg.recall,
        unit: 'ms',
        target: '< 10 ms',
        peers: [{ name: 'SQLite FTS5', value: onSqlite.recall }],
      },
    ];
  } finally {
    await cluster.cleanup();
    rmSync(dir, { recursive: true, force: true });
  }
}
