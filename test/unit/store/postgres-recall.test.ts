// Memories ranked on PostgreSQL as on SQLite: one corpus saved in both stores, the same queries,
// the same notes in the same order (what a user notices when the store changes under an agent).
// Where they part: ts_rank_cd knows no word rarity, so in a query mixing a common word with a
// rare one ("the API") bm25 favours the rare word and ts_rank_cd counts both alike.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { silentLogger } from '../../../src/shared/logger.js';
import { openStores } from '../../../src/store/open.js';
import type { Stores } from '../../../src/store/stores.js';
import { type PgCluster, startPostgres } from '../../helpers/postgres.js';

const NOTES: [string, string[]][] = [
  ['Deploy the billing API with the blue-green script', ['deploy', 'billing']],
  ['The staging database is backed up nightly at 02:00 UTC', ['database', 'backup']],
  ['Rotate the database password after every deploy', ['security']],
  ['Weekly report: latency of the search API went down', ['report']],
  ['Café opening hours changed: the crème brûlée is back', ['food']],
  ['Deployment checklist: migrations first, then the API, then the workers', ['deploy']],
  ['prod-db failover drill is scheduled for Friday', ['database']],
  ['Nothing about the other topics here at all', []],
];

const QUERIES = [
  'deploy',
  'database backup',
  'deploy* API',
  'creme brulee',
  'prod-db',
  'password OR rotate',
  'search latency report',
];

describe('memory recall on PostgreSQL and on SQLite', () => {
  let cluster: PgCluster;
  let dir: string;
  let sqlite: Stores;
  let pg: Stores;

  before(async () => {
    cluster = await startPostgres();
    dir = mkdtempSync(join(tmpdir(), 'paddock-recall-'));
    sqlite = await openStores(undefined, { dataDir: dir, logger: silentLogger() });
    pg = await openStores(
      { url: cluster.url },
      { dataDir: dir, logger: silentLogger(), env: { PADDOCK_STORE_PASSWORD: cluster.password } },
    );
    for (const [content, tags] of NOTES) {
      await sqlite.memory.save('team', content, tags);
      await pg.memory.save('team', content, tags);
    }
  });

  after(async () => {
    await pg?.close();
    await sqlite?.close();
    await cluster?.cleanup();
    rmSync(dir, { recursive: true, force: true });
  });

  for (const query of QUERIES) {
    it(`finds the same notes in the same order for "${query}"`, async () => {
      const fromSqlite = (await sqlite.memory.recall('team', query, 5)).map((m) => m.content);
      const fromPg = (await pg.memory.recall('team', query, 5)).map((m) => m.content);
      assert.ok(fromSqlite.length > 0, 'the query finds something');
      assert.deepEqual(fromPg, fromSqlite);
    });
  }
});
