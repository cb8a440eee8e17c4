/**
 * Group commit in the SQLite audit store: rows written in the same turn of the event loop
 * share one commit, each promise resolves only once its row is committed, and one bad row
 * of a batch fails alone.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import BetterSqlite3 from 'better-sqlite3';
import { SqliteAuditStore } from '../../../../src/store/sqlite/audit-store.js';
import { openDatabase } from '../../../../src/store/sqlite/database.js';
import { GroupCommit } from '../../../../src/store/sqlite/group-commit.js';
import { invocation, started } from '../fixtures.js';
import { withTempDir } from './temp-dir.js';

/** Frames in the WAL file (what a checkpoint would copy): grows with every commit. */
function walFrames(db: BetterSqlite3.Database): number {
  const [row] = db.pragma('wal_checkpoint(PASSIVE)') as { log: number }[];
  return row!.log;
}

describe('SQLite group commit', () => {
  it('gives 40 rows begun in the same turn fewer WAL frames than 40 separate commits would write', () =>
    withTempDir(async (dir) => {
      const db = openDatabase(join(dir, 'p.db'));
      try {
        const audit = new SqliteAuditStore(db);
        await audit.record(invocation());
        db.pragma('wal_checkpoint(TRUNCATE)');
        const rows = await Promise.all(Array.from({ length: 40 }, () => audit.begin(started())));
        // one commit writes each page it touched once; 40 commits write at least one frame each
        const frames = walFrames(db);
        assert.ok(frames < 40, `${frames} WAL frames for 40 rows begun together`);
        assert.deepEqual(
          rows.map((r) => r.seq),
          rows.map((_, i) => rows[0]!.seq + i),
        );
        await Promise.all(
          rows.map((r) => audit.complete(r.id, { durationMs: 1, outputBytes: 1, success: true })),
        );
        assert.ok(walFrames(db) < frames + 40);
      } finally {
        db.close();
      }
    }));

  it('resolves a write only once its row is visible to another connection', () =>
    withTempDir(async (dir) => {
      const file = join(dir, 'p.db');
      const db = openDatabase(file);
      const reader = new BetterSqlite3(file, { readonly: true });
      try {
        const audit = new SqliteAuditStore(db);
        const count = reader.prepare('SELECT count(*) FROM tool_invocations').pluck();
        const writes = Array.from({ length: 10 }, () => audit.record(invocation()));
        assert.equal(count.get(), 0, 'nothing is committed before the turn ends');
        for (const w of writes) {
          const row = await w;
          assert.ok(
            (reader
              .prepare('SELECT count(*) FROM tool_invocations WHERE id = ?')
              .pluck()
              .get(row.id) as number) === 1,
          );
        }
        assert.equal(count.get(), 10);
      } finally {
        reader.close();
        db.close();
      }
    }));

  it('fails only the row that breaks a constraint; the others of its batch are committed', () =>
    withTempDir(async (dir) => {
      const db = openDatabase(join(dir, 'p.db'));
      try {
        const audit = new SqliteAuditStore(db);
        const first = await audit.record(invocation({ id: 'inv_taken' }));
        const results = await Promise.allSettled([
          audit.record(invocation({ id: 'inv_a' })),
          audit.record(invocation({ id: 'inv_taken' })),
          audit.begin(started({ id: 'inv_b' })),
        ]);
        assert.deepEqual(
          results.map((r) => r.status),
          ['fulfilled', 'rejected', 'fulfilled'],
        );
        assert.match(String((results[1] as PromiseRejectedResult).reason), /inv_taken/);
        const ids = (await audit.query({ ascending: true })).map((r) => r.id);
        assert.deepEqual(ids, [first.id, 'inv_a', 'inv_b']);
      } finally {
        db.close();
      }
    }));

  it('fails every write of a batch at once, with a clear error, when the database itself fails', () =>
    withTempDir(async (dir) => {
      const db = openDatabase(join(dir, 'p.db'));
      const audit = new SqliteAuditStore(db);
      db.close();
      const results = await Promise.allSettled([audit.record(invocation()), audit.begin(started())]);
      for (const r of results) {
        assert.equal(r.status, 'rejected');
        assert.match(String((r as PromiseRejectedResult).reason), /audit row.*unavailable/);
      }
    }));

  it('commits a lone write by itself, and the rest of a batch around one write that breaks NOT NULL', () =>
    withTempDir(async (dir) => {
      const db = openDatabase(join(dir, 'p.db'));
      try {
        db.exec('CREATE TABLE t (v INTEGER NOT NULL)');
        const commits = new GroupCommit(db);
        const insert = db.prepare('INSERT INTO t (v) VALUES (?)');
        assert.equal(await commits.run(() => insert.run(1).changes), 1);
        const mixed = await Promise.allSettled([
          commits.run(() => insert.run(2).changes),
          commits.run(() => insert.run(null).changes),
          commits.run(() => insert.run(3).changes),
        ]);
        assert.deepEqual(
          mixed.map((r) => r.status),
          ['fulfilled', 'rejected', 'fulfilled'],
        );
        assert.deepEqual(db.prepare('SELECT v FROM t ORDER BY v').pluck().all(), [1, 2, 3]);
      } finally {
        db.close();
      }
    }));
});
