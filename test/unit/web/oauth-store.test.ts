import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { openDatabase } from '../../../src/audit/database.js';
import { OAuthStore, secretDigest } from '../../../src/web/oauth/store.js';

describe('OAuth store (SQLite)', () => {
  let db: ReturnType<typeof openDatabase>;
  let now = 1_000_000;
  let store: OAuthStore;

  before(() => {
    db = openDatabase(':memory:');
    store = new OAuthStore(db, () => now);
  });
  after(() => db.close());

  it('stores secrets only as digests and lets exactly one of racing consumers use one', () => {
    const client = store.saveClient({ name: 'c', redirectUris: ['https://a.example/cb'] });
    const grant = store.createGrant(client, ['tools'], 'http://127.0.0.1/mcp');
    const { secret } = store.issue(grant.id, 'code', 60_000, {
      redirectUri: 'https://a.example/cb',
      codeChallenge: 'x',
    });
    const raw = JSON.stringify(db.prepare('SELECT * FROM oauth_secrets').all());
    assert.ok(!raw.includes(secret), 'the secret itself is not stored');
    assert.ok(raw.includes(secretDigest(secret)));
    const found = store.find(secret, 'code');
    assert.ok(found);
    const wins = Array.from({ length: 10 }, () => store.consume(found.digest)).filter(Boolean);
    assert.equal(wins.length, 1);
    assert.equal(store.find(secret, 'access'), null, 'a code is not an access token');
  });

  it('keeps at most the given number of clients that never got a grant, oldest dropped first', () => {
    const kept = store.saveClient({ name: 'granted', redirectUris: ['https://a.example/cb'] });
    store.createGrant(kept, ['tools'], 'r');
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) {
      now += 1;
      ids.push(store.saveClient({ name: `n${i}`, redirectUris: ['https://a.example/cb'] }).clientId);
    }
    store.pruneUnusedClients(2);
    assert.deepEqual(
      ids.map((id) => store.clientByClientId(id) !== null),
      [false, false, false, true, true],
    );
    assert.ok(store.clientByClientId(kept.clientId), 'a client with a grant stays');
  });

  it('revokes every secret of a client and keeps used ones until a day past expiry', () => {
    const client = store.saveClient({ name: 'r', redirectUris: ['https://a.example/cb'] });
    const grant = store.createGrant(client, ['computer'], 'r');
    const access = store.issue(grant.id, 'access', 1_000).secret;
    assert.deepEqual(store.revokeClient(client.id), [grant.id]);
    assert.notEqual(store.find(access, 'access')?.usedAt, null);
    assert.deepEqual(store.revokedAmong([grant.id]), [grant.id]);
    now += 1_000 + 86_400_000 - 1;
    store.pruneExpired();
    assert.ok(store.find(access, 'access'), 'kept within the day');
    now += 2;
    store.pruneExpired();
    assert.equal(store.find(access, 'access'), null);
  });
});
