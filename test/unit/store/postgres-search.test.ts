import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { memoryVector, toTsQuery, words } from '../../../src/store/postgres/search.js';
import { MAX_QUERY_TERMS } from '../../../src/store/sqlite/fts-query.js';

describe('PostgreSQL memory search terms', () => {
  it('words are runs of letters and digits, lower-cased, without diacritics (as the FTS5 unicode61 index sees them)', () => {
    assert.deepEqual(words('Crème Brûlée, naïve_CAFÉ v2.1 Ünïcode'), [
      'creme',
      'brulee',
      'naive',
      'cafe',
      'v2',
      '1',
      'unicode',
    ]);
    assert.deepEqual(words('データベース の バックアップ'), ['データベース', 'の', 'バックアップ']);
  });

  it('a note keeps content words at weight B and tag words at weight A, with their positions', () => {
    assert.equal(
      memoryVector('Deploy the deploy', ['ops-team']),
      "'deploy':1B,3B 'the':2B 'ops':12A 'team':13A",
    );
  });

  it('query operators are plain words, words are ORed, a trailing * is a prefix, a word of parts is a phrase', () => {
    assert.equal(toTsQuery('deploy AND NOT db'), "'deploy' | 'and' | 'not' | 'db'");
    assert.equal(toTsQuery('deploy* prod-db'), "'deploy':* | ('prod' <-> 'db')");
    assert.equal(toTsQuery('"quoted" (paren) a:b'), "'quoted' | 'paren' | ('a' <-> 'b')");
    assert.equal(toTsQuery("it's"), "('it' <-> 's')");
  });

  it('a query with nothing searchable is no query, and at most MAX_QUERY_TERMS words count', () => {
    assert.equal(toTsQuery(''), undefined);
    assert.equal(toTsQuery('  -- * !! '), undefined);
    const many = Array.from({ length: MAX_QUERY_TERMS + 8 }, (_, i) => `w${i}`).join(' ');
    assert.equal(toTsQuery(many)?.split(' | ').length, MAX_QUERY_TERMS);
  });
});
