import assert from 'node:assert/strict';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { type Database, openDatabase } from '../../../src/audit/database.js';
import { toFtsQuery } from '../../../src/audit/fts-query.js';
import { SqliteMemoryStore } from '../../../src/audit/sqlite-memory-store.js';
import { PaddockError } from '../../../src/shared/errors.js';
import { withTempDir } from './temp-dir.js';

/** A store whose clock ticks one millisecond per save, so "most recent" is well defined. */
async function withMemory(fn: (store: SqliteMemoryStore, db: Database) => void) {
  await withTempDir((dir) => {
    const db = openDatabase(join(dir, 'paddock.db'));
    let clock = 1_700_000_000_000;
    try {
      fn(new SqliteMemoryStore(db, { now: () => clock++ }), db);
    } finally {
      db.close();
    }
  });
}

const contents = (memories: { content: string }[]) => memories.map((m) => m.content);

describe('SqliteMemoryStore', () => {
  it('ranks the memory that matches the query best first, with a higher score', () =>
    withMemory((store) => {
      store.save('agent:a', 'Lunch was pasta today.');
      store.save('agent:a', 'The staging database migration failed at step three.');
      store.save('agent:a', 'The database was restarted.');
      store.save('agent:a', 'Renewed the TLS certificate.');
      const found = store.recall('agent:a', 'database migration staging', 10);
      assert.deepEqual(contents(found), [
        'The staging database migration failed at step three.',
        'The database was restarted.',
      ]);
      assert.ok(found[0]!.score! > found[1]!.score!);
      assert.ok(found[1]!.score! > 0);
    }));

  it('finds memories by tag and returns their tags, cleaned', () =>
    withMemory((store) => {
      const saved = store.save('agent:a', 'Deploys happen on Tuesdays.', [' ops ', 'release', 'ops', '']);
      assert.deepEqual(saved.tags, ['ops', 'release']);
      store.save('agent:a', 'Unrelated note about lunch.');
      const found = store.recall('agent:a', 'release', 5);
      assert.deepEqual(
        found.map((m) => m.id),
        [saved.id],
      );
      assert.deepEqual(found[0]!.tags, ['ops', 'release']);
      assert.equal(found[0]!.createdAt, saved.createdAt);
    }));

  it('never returns another namespace’s memories, even with a matching query', () =>
    withMemory((store) => {
      store.save('agent:a', 'The deploy key lives in the vault.');
      store.save('agent:ab', 'The deploy key for ab lives elsewhere.');
      store.save('agent', 'The deploy key of the parent namespace.');
      assert.deepEqual(contents(store.recall('agent:a', 'deploy key', 10)), [
        'The deploy key lives in the vault.',
      ]);
      assert.deepEqual(contents(store.recall('agent:a', '', 10)), ['The deploy key lives in the vault.']);
      assert.deepEqual(store.recall("agent:a' OR '1'='1", 'deploy', 10), []);
      assert.deepEqual(store.recall('agent:c', 'deploy', 10), []);
    }));

  it('searches FTS5 syntax in a query as plain text, without errors', () =>
    withMemory((store) => {
      store.save('n', 'alpha beta gamma');
      store.save('n', 'delta epsilon');
      const queries = [
        '"',
        '""',
        '"alpha',
        '*',
        'alpha*beta',
        'AND',
        'alpha AND',
        'OR OR',
        'NOT alpha',
        'NEAR(alpha beta)',
        '-',
        '-alpha',
        ':',
        'content:alpha',
        'tags:x',
        '(',
        ')',
        '^alpha',
        '{content}: alpha',
        "alpha' OR 1=1 --",
        '+',
        '🦄',
        '   ',
      ];
      for (const q of queries) {
        assert.doesNotThrow(() => store.recall('n', q, 10), q);
      }
      // Operators are words: "-alpha" still finds alpha, "alpha AND nothing" is not an AND.
      assert.deepEqual(contents(store.recall('n', '-alpha', 10)), ['alpha beta gamma']);
      assert.deepEqual(contents(store.recall('n', 'alpha AND zzz', 10)), ['alpha beta gamma']);
      assert.deepEqual(contents(store.recall('n', 'NOT alpha', 10)), ['alpha beta gamma']);
      assert.deepEqual(contents(store.recall('n', 'content:delta', 10)), []);
    }));

  it('matches a word prefix given with a trailing star, and ignores accents', () =>
    withMemory((store) => {
      store.save('n', 'The deployment to the café server finished.');
      assert.equal(store.recall('n', 'deploy*', 5).length, 1);
      assert.equal(store.recall('n', 'deploy', 5).length, 0);
      assert.equal(store.recall('n', 'cafe', 5).length, 1);
    }));

  it('returns the most recent memories first for an empty or wordless query', () =>
    withMemory((store) => {
      for (const text of ['first', 'second', 'third', 'fourth']) store.save('n', text);
      store.save('other', 'fifth, elsewhere');
      assert.deepEqual(contents(store.recall('n', '', 3)), ['fourth', 'third', 'second']);
      assert.deepEqual(contents(store.recall('n', ' " * - ', 2)), ['fourth', 'third']);
      assert.equal(store.recall('n', '', 3)[0]!.score, undefined);
    }));

  it('respects the limit of a ranked recall', () =>
    withMemory((store) => {
      for (let i = 0; i < 20; i++) store.save('n', `note ${i} about backups`);
      assert.equal(store.recall('n', 'backups', 7).length, 7);
    }));

  it('rejects empty or oversized input with a clear INVALID_ARGUMENT', () =>
    withMemory((store) => {
      const invalid = (fn: () => unknown, argument: string) =>
        assert.throws(
          fn,
          (e: unknown) =>
            e instanceof PaddockError && e.code === 'INVALID_ARGUMENT' && e.details.argument === argument,
        );
      invalid(() => store.save('', 'text'), 'namespace');
      invalid(() => store.save('n', '   '), 'content');
      invalid(() => store.save('n', 'x'.repeat(64 * 1024 + 1)), 'content');
      invalid(
        () =>
          store.save(
            'n',
            'x',
            Array.from({ length: 33 }, (_, i) => `t${i}`),
          ),
        'tags',
      );
      invalid(() => store.save('n', 'x', ['t'.repeat(65)]), 'tags');
      invalid(() => store.recall('n', 'x', 0), 'limit');
      invalid(() => store.recall('n', 'x', 1001), 'limit');
      invalid(() => store.recall('n', 'x', 2.5), 'limit');
    }));

  it('keeps memories and their index across closing and reopening the database', async () => {
    await withTempDir((dir) => {
      const file = join(dir, 'paddock.db');
      const first = openDatabase(file);
      const saved = new SqliteMemoryStore(first).save('agent:a', 'The backup runs at 02:00 UTC.', ['backup']);
      first.close();
      const second = openDatabase(file);
      try {
        const found = new SqliteMemoryStore(second).recall('agent:a', 'backup', 5);
        assert.deepEqual(
          found.map(({ score: _score, ...m }) => m),
          [saved],
        );
      } finally {
        second.close();
      }
    });
  });
});

describe('toFtsQuery', () => {
  it('quotes every word, doubles inner quotes and joins with OR', () => {
    assert.equal(toFtsQuery('alpha "beta" AND'), '"alpha" OR """beta""" OR "AND"');
    assert.equal(toFtsQuery('deploy* x'), '"deploy"* OR "x"');
  });

  it('returns undefined when no word has a letter or digit', () => {
    assert.equal(toFtsQuery(''), undefined);
    assert.equal(toFtsQuery(' * " - : ( ) '), undefined);
  });
});
