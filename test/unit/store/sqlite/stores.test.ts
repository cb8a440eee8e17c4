/**
 * What the SQLite stores guarantee beyond the shared suite: what the file holds (never a
 * secret as given), pids of dead processes found at once, FTS5's prefixes and accents, the
 * schema's checks, and an OAuth clock of the test's own.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import BetterSqlite3 from 'better-sqlite3';
import { REDACTED } from '../../../../src/shared/redact.js';
import { secretDigest } from '../../../../src/store/oauth.js';
import { SqliteAuditStore } from '../../../../src/store/sqlite/audit-store.js';
import { type Database, openDatabase } from '../../../../src/store/sqlite/database.js';
import { toFtsQuery } from '../../../../src/store/sqlite/fts-query.js';
import { SqliteMemoryStore } from '../../../../src/store/sqlite/memory-store.js';
import { SqliteOAuthStore } from '../../../../src/store/sqlite/oauth-store.js';
import { SqliteAgentRunStore } from '../../../../src/store/sqlite/run-store.js';
import { invocation, newRun, started } from '../fixtures.js';
import { withTempDir } from './temp-dir.js';

async function withDb(fn: (db: Database, file: string) => Promise<void>) {
  await withTempDir(async (dir) => {
    const file = join(dir, 'paddock.db');
    const db = openDatabase(file);
    try {
      await fn(db, file);
    } finally {
      db.close();
    }
  });
}

/** The pid of a process that has exited. */
function deadPid(): number {
  return Number(spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))']).stdout);
}

describe('SQLite audit store', () => {
  it('writes the input redacted and truncated to the file, never as given', () =>
    withDb(async (db) => {
      const audit = new SqliteAuditStore(db);
      const input = {
        url: 'https://x.test',
        headers: { Authorization: 'Bearer s3cr3t' },
        body: 'b'.repeat(9000),
      };
      await audit.record(invocation({ id: 'inv_secret', input }));
      const raw = db.prepare('SELECT input FROM tool_invocations WHERE id = ?').get('inv_secret') as {
        input: string;
      };
      const whole = JSON.stringify(db.prepare('SELECT input FROM audit_inputs').all());
      assert.ok(!raw.input.includes('s3cr3t') && !whole.includes('s3cr3t'));
      assert.ok(raw.input.includes(`"Authorization":"${REDACTED}"`));
      assert.ok(Buffer.byteLength(raw.input) <= 4096);
      assert.match(raw.input, /…\[truncated \d+ bytes\]$/);
    }));

  it('has the row committed, for a read-only connection, when listeners hear of it', () =>
    withDb(async (db, file) => {
      const audit = new SqliteAuditStore(db);
      const reader = new BetterSqlite3(file, { readonly: true });
      try {
        const seen: Array<number | undefined> = [];
        audit.subscribe((row) => {
          const other = reader.prepare('SELECT seq FROM tool_invocations WHERE id = ?').get(row.id) as
            | { seq: number }
            | undefined;
          seen.push(other?.seq);
        });
        const stored = await audit.record(invocation());
        assert.deepEqual(seen, [stored.seq]);
      } finally {
        audit.close();
        reader.close();
      }
    }));

  it('delivers each row once to a listener, however many this process writes between two polls', () =>
    withDb(async (db, file) => {
      // the poll runs every 20 ms; 10,000 rows are written without letting a timer fire, so the
      // poll finds all of them unread at once (its memory of pushed rows must not run out)
      const audit = new SqliteAuditStore(db, { feedIntervalMs: 20 });
      const other = new SqliteAuditStore(openDatabase(file));
      const seen = new Map<string, number>();
      const sub = audit.subscribe((row) => seen.set(row.id, (seen.get(row.id) ?? 0) + 1));
      try {
        await new Promise((r) => setTimeout(r, 60));
        for (let i = 0; i < 10_000; i++) await audit.record(invocation({ id: `inv_local_${i}` }));
        // a row of another connection reaches the listener only through the poll, after the rest
        await other.record(invocation({ id: 'inv_other' }));
        const deadline = Date.now() + 30_000;
        while (!seen.has('inv_other')) {
          assert.ok(Date.now() < deadline, 'the poll delivered the other connection’s row');
          await new Promise((r) => setTimeout(r, 10));
        }
        await new Promise((r) => setTimeout(r, 100));
        assert.equal(seen.size, 10_001);
        assert.deepEqual(
          [...seen].filter(([, n]) => n !== 1),
          [],
        );
      } finally {
        sub.dispose();
        audit.close();
        other.close();
      }
    }));

  it('marks running rows of a dead process interrupted, once, and tells listeners', () =>
    withDb(async (db) => {
      const audit = new SqliteAuditStore(db);
      const dead = started();
      const mine = started();
      await audit.begin(dead);
      await audit.begin(mine);
      db.prepare('UPDATE tool_invocations SET owner_pid = ? WHERE id = ?').run(deadPid(), dead.id);
      const seen: string[] = [];
      const sub = audit.subscribe((row) => seen.push(`${row.id}:${row.state}`));
      assert.equal(await audit.reconcile(), 1);
      assert.equal(await audit.reconcile(), 0);
      const row = await audit.get(dead.id);
      assert.equal(row?.state, 'interrupted');
      assert.equal(row?.success, false);
      assert.ok(row?.endSeq);
      assert.equal((await audit.get(mine.id))?.state, 'running');
      assert.deepEqual(seen, [`${dead.id}:interrupted`]);
      sub.dispose();
    }));
});

describe('SQLite agent run store', () => {
  it('marks running rows of a dead process as failed at once, and leaves live ones alone', () =>
    withDb(async (db) => {
      const runs = new SqliteAgentRunStore(db);
      await runs.start(newRun({ id: 'run_dead', owner: 'srv_x', leaseExpiresAt: Date.now() + 60_000 }));
      await runs.start(newRun({ id: 'run_live', agent: 'other' }));
      db.prepare('UPDATE agent_runs SET pid = ? WHERE id = ?').run(deadPid(), 'run_dead');
      assert.deepEqual(
        (await runs.reconcile()).map((r) => r.id),
        ['run_dead'],
      );
      assert.equal((await runs.get('run_dead'))?.status, 'failed');
      assert.match((await runs.get('run_dead'))?.error ?? '', /stopped before it ended/);
      assert.equal((await runs.get('run_live'))?.status, 'running');
    }));

  it('rejects a run row with an unknown trigger (schema CHECK)', () =>
    withDb(async (db) => {
      const runs = new SqliteAgentRunStore(db);
      await assert.rejects(runs.start(newRun({ trigger: 'cron' as never })), /CHECK constraint/);
    }));
});

describe('SQLite memory store', () => {
  it('matches a word prefix given with a trailing star, and ignores accents', () =>
    withDb(async (db) => {
      const memory = new SqliteMemoryStore(db);
      await memory.save('n', 'The deployment to the café server finished.');
      assert.equal((await memory.recall('n', 'deploy*', 5)).length, 1);
      assert.equal((await memory.recall('n', 'deploy', 5)).length, 0);
      assert.equal((await memory.recall('n', 'cafe', 5)).length, 1);
      assert.deepEqual(await memory.recall('n', 'content:deployment', 5), [], 'a column filter is a word');
    }));

  it('keeps memories and their index across closing and reopening the database', () =>
    withTempDir(async (dir) => {
      const file = join(dir, 'paddock.db');
      const first = openDatabase(file);
      const saved = await new SqliteMemoryStore(first).save('agent:a', 'The backup runs at 02:00 UTC.', [
        'backup',
      ]);
      first.close();
      const second = openDatabase(file);
      try {
        const found = await new SqliteMemoryStore(second).recall('agent:a', 'backup', 5);
        assert.deepEqual(
          found.map(({ score: _score, ...m }) => m),
          [saved],
        );
      } finally {
        second.close();
      }
    }));

  it('quotes every FTS5 word, doubles inner quotes, joins with OR, and gives up on wordless text', () => {
    assert.equal(toFtsQuery('alpha "beta" AND'), '"alpha" OR """beta""" OR "AND"');
    assert.equal(toFtsQuery('deploy* x'), '"deploy"* OR "x"');
    assert.equal(toFtsQuery(''), undefined);
    assert.equal(toFtsQuery(' * " - : ( ) '), undefined);
  });
});

describe('SQLite OAuth store', () => {
  it('stores secrets only as digests, and keeps revoked ones until a day past expiry', () =>
    withDb(async (db) => {
      let now = 1_000_000;
      const oauth = new SqliteOAuthStore(db, () => now);
      const client = await oauth.saveClient({ name: 'r', redirectUris: ['https://a.example/cb'] });
      const grant = await oauth.createGrant(client, ['computer'], 'r');
      const access = (await oauth.issue(grant.id, 'access', 1_000)).secret;
      const raw = JSON.stringify(db.prepare('SELECT * FROM oauth_secrets').all());
      assert.ok(!raw.includes(access), 'the secret itself is not stored');
      assert.ok(raw.includes(secretDigest(access)));
      assert.deepEqual(await oauth.revokeClient(client.id), [grant.id]);
      now += 1_000 + 86_400_000 - 1;
      await oauth.pruneExpired();
      assert.ok(await oauth.find(access, 'access'), 'kept within the day');
      now += 2;
      await oauth.pruneExpired();
      assert.equal(await oauth.find(access, 'access'), null);
    }));
});
