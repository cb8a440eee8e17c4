import assert from 'node:assert/strict';
import { statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { PaddockError } from '../../../../src/shared/errors.js';
import { openDatabase } from '../../../../src/store/sqlite/database.js';
import {
  appliedMigrations,
  applyMigrations,
  MIGRATIONS,
  type Migration,
} from '../../../../src/store/sqlite/migrations.js';
import { withTempDir } from './temp-dir.js';

function objectNames(db: ReturnType<typeof openDatabase>): string[] {
  const rows = db.prepare("SELECT name FROM sqlite_master WHERE name NOT LIKE 'sqlite_%'").all() as {
    name: string;
  }[];
  return rows.map((r) => r.name);
}

describe('openDatabase', () => {
  it('opens the file in WAL mode with NORMAL sync, foreign keys and a busy timeout', async () => {
    await withTempDir((dir) => {
      const db = openDatabase(join(dir, 'paddock.db'));
      try {
        assert.equal(db.pragma('journal_mode', { simple: true }), 'wal');
        assert.equal(db.pragma('synchronous', { simple: true }), 1);
        assert.equal(db.pragma('foreign_keys', { simple: true }), 1);
        assert.equal(db.pragma('busy_timeout', { simple: true }), 5000);
      } finally {
        db.close();
      }
    });
  });

  it('uses FULL sync when asked', async () => {
    await withTempDir((dir) => {
      const db = openDatabase(join(dir, 'paddock.db'), { synchronous: 'FULL', busyTimeoutMs: 250 });
      try {
        assert.equal(db.pragma('synchronous', { simple: true }), 2);
        assert.equal(db.pragma('busy_timeout', { simple: true }), 250);
      } finally {
        db.close();
      }
    });
  });

  it('creates a missing parent directory with mode 0700 and the file with mode 0600', async () => {
    await withTempDir((dir) => {
      const file = join(dir, 'data', 'nested', 'paddock.db');
      const db = openDatabase(file);
      db.close();
      assert.equal(statSync(join(dir, 'data', 'nested')).mode & 0o777, 0o700);
      assert.equal(statSync(join(dir, 'data')).mode & 0o777, 0o700);
      assert.equal(statSync(file).mode & 0o777, 0o600);
    });
  });

  it('creates the audit, memory and launch link tables with their indexes', async () => {
    await withTempDir((dir) => {
      const db = openDatabase(join(dir, 'paddock.db'));
      try {
        const names = objectNames(db);
        for (const name of [
          'tool_invocations',
          'tool_invocations_tool',
          'tool_invocations_caller',
          'tool_invocations_started_at',
          'tool_invocations_parent_id',
          'tool_invocations_job_id',
          'memories',
          'memories_fts',
          'launch_links',
          'schema_migrations',
        ]) {
          assert.ok(names.includes(name), `missing ${name}`);
        }
      } finally {
        db.close();
      }
    });
  });

  it('answers filtered audit queries from the indexes', async () => {
    await withTempDir((dir) => {
      const db = openDatabase(join(dir, 'paddock.db'));
      try {
        const plan = (sql: string) =>
          (db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all() as { detail: string }[])
            .map((r) => r.detail)
            .join('\n');
        assert.match(
          plan("SELECT * FROM tool_invocations WHERE tool = 'x' ORDER BY seq DESC"),
          /tool_invocations_tool/,
        );
        assert.match(
          plan("SELECT * FROM tool_invocations WHERE parent_id = 'p'"),
          /tool_invocations_parent_id/,
        );
        assert.match(plan("SELECT * FROM tool_invocations WHERE job_id = 'j'"), /tool_invocations_job_id/);
        // the start-up search for calls a dead process left running reads no other row
        const running = plan(
          "SELECT id, owner_pid FROM tool_invocations WHERE end_seq IS NULL AND state = 'running' ORDER BY seq",
        );
        assert.match(running, /USING INDEX tool_invocations_end_seq/);
        assert.doesNotMatch(running, /TEMP B-TREE/);
      } finally {
        db.close();
      }
    });
  });

  it('records every migration once and applies nothing when reopened', async () => {
    await withTempDir((dir) => {
      const file = join(dir, 'paddock.db');
      openDatabase(file).close();
      const db = openDatabase(file);
      try {
        assert.deepEqual(
          appliedMigrations(db),
          MIGRATIONS.map((m) => ({ version: m.version, name: m.name })),
        );
        assert.equal(db.pragma('user_version', { simple: true }), MIGRATIONS.length);
        assert.equal(applyMigrations(db), 0);
      } finally {
        db.close();
      }
    });
  });

  it('opens an up-to-date database while another connection holds the write lock', async () => {
    await withTempDir((dir) => {
      const file = join(dir, 'paddock.db');
      const writer = openDatabase(file);
      try {
        writer.exec('BEGIN IMMEDIATE');
        const reader = openDatabase(file, { busyTimeoutMs: 0 });
        reader.close();
      } finally {
        writer.exec('ROLLBACK');
        writer.close();
      }
    });
  });

  it('applies only the steps appended since the last open', async () => {
    await withTempDir((dir) => {
      const file = join(dir, 'paddock.db');
      openDatabase(file, { migrations: MIGRATIONS.slice(0, 1) }).close();
      const db = openDatabase(file, { migrations: MIGRATIONS.slice(0, 1) });
      try {
        assert.ok(!objectNames(db).includes('memories'));
        assert.equal(applyMigrations(db), MIGRATIONS.length - 1);
        assert.ok(objectNames(db).includes('memories'));
      } finally {
        db.close();
      }
    });
  });

  it('rolls back every pending step when one of them fails', async () => {
    await withTempDir((dir) => {
      const broken: Migration[] = [
        { version: 1, name: 'good', sql: 'CREATE TABLE good (x INTEGER)' },
        { version: 2, name: 'bad', sql: 'CREATE TABLE oops (' },
      ];
      assert.throws(() => openDatabase(join(dir, 'paddock.db'), { migrations: broken }), PaddockError);
      const db = openDatabase(join(dir, 'paddock.db'), { migrations: [] });
      try {
        assert.ok(!objectNames(db).includes('good'));
        assert.deepEqual(appliedMigrations(db), []);
      } finally {
        db.close();
      }
    });
  });

  it('refuses a database written by a build with more migrations', async () => {
    await withTempDir((dir) => {
      const file = join(dir, 'paddock.db');
      openDatabase(file).close();
      assert.throws(
        () => openDatabase(file, { migrations: MIGRATIONS.slice(0, 2) }),
        (e: unknown) =>
          e instanceof PaddockError && e.code === 'INTERNAL' && /Upgrade Paddock/.test(e.message),
      );
    });
  });

  it('refuses a migration list whose released steps were renamed', async () => {
    await withTempDir((dir) => {
      const file = join(dir, 'paddock.db');
      openDatabase(file).close();
      const edited = MIGRATIONS.map((m, i) => (i === 0 ? { ...m, name: 'renamed' } : m));
      assert.throws(
        () => openDatabase(file, { migrations: edited }),
        (e: unknown) => e instanceof PaddockError && /append new steps/.test(e.message),
      );
    });
  });

  it('rejects a migration list with a gap in its versions', async () => {
    await withTempDir((dir) => {
      const gap: Migration[] = [{ version: 2, name: 'two', sql: 'SELECT 1' }];
      assert.throws(
        () => openDatabase(join(dir, 'paddock.db'), { migrations: gap }),
        (e: unknown) => e instanceof PaddockError && /versions must run/.test(e.message),
      );
    });
  });

  it('names the file and what to check when the file is not a database', async () => {
    await withTempDir((dir) => {
      const file = join(dir, 'paddock.db');
      writeFileSync(file, 'this is not sqlite, just some text long enough to hold a header.'.repeat(4));
      assert.throws(
        () => openDatabase(file),
        (e: unknown) =>
          e instanceof PaddockError && e.message.includes(file) && e.message.includes('PADDOCK_DATA'),
      );
    });
  });
});
