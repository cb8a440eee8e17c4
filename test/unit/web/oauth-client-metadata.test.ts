import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { openDatabase } from '../../../src/store/sqlite/database.js';
import { SqliteOAuthStore } from '../../../src/store/sqlite/oauth-store.js';
import { ClientResolver, fetchPublicMetadata } from '../../../src/web/oauth/client-metadata.js';

describe('OAuth client ID metadata documents', () => {
  let db: ReturnType<typeof openDatabase>;
  let store: SqliteOAuthStore;
  let site: Server;
  let port: number;
  const docs = new Map<string, unknown>();

  before(async () => {
    db = openDatabase(':memory:');
    store = new SqliteOAuthStore(db);
    site = createServer((req, res) => {
      const doc = docs.get(req.url ?? '');
      if (doc === undefined) return void res.writeHead(404).end();
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(doc));
    });
    await new Promise<void>((resolve) => site.listen(0, '127.0.0.1', resolve));
    port = (site.address() as AddressInfo).port;
  });
  after(async () => {
    db.close();
    await new Promise((resolve) => site.close(resolve));
  });

  /** Serves the documents over plain http on loopback, standing in for the public https fetch. */
  const resolver = () =>
    new ClientResolver(store, async (url) => {
      const res = await fetch(`http://127.0.0.1:${port}${url.pathname}`);
      if (res.status !== 200) throw new Error(`the document answered HTTP ${res.status}`);
      return res.json();
    });

  it('verifies a document that names its own URL as client_id and keeps the client', async () => {
    const clientId = 'https://app.example/oauth/client.json';
    docs.set('/oauth/client.json', {
      client_id: clientId,
      client_name: 'Example App',
      redirect_uris: ['https://app.example/callback'],
    });
    const r = await resolver().resolve(clientId);
    assert.ok(r.ok, r.ok ? '' : r.reason);
    assert.equal(r.client.verified, true);
    assert.equal(r.client.client.name, 'Example App');
    assert.deepEqual((await store.clientByClientId(clientId))?.redirectUris, [
      'https://app.example/callback',
    ]);
  });

  it('refuses a document that names another client_id, lists bad redirect URIs, or is missing', async () => {
    docs.set('/other.json', {
      client_id: 'https://evil.example/x.json',
      redirect_uris: ['https://a.example/cb'],
    });
    docs.set('/bad-uris.json', {
      client_id: 'https://app.example/bad-uris.json',
      redirect_uris: ['http://a.example/cb'],
    });
    const cases: [string, RegExp][] = [
      ['https://app.example/other.json', /does not name this URL/],
      ['https://app.example/bad-uris.json', /acceptable redirect_uris/],
      ['https://app.example/missing.json', /could not be fetched: the document answered HTTP 404/],
      ['https://app.example/', /with a path/],
      ['unregistered-id', /not registered here/],
    ];
    for (const [id, reason] of cases) {
      const r = await resolver().resolve(id);
      assert.equal(r.ok, false, id);
      assert.match(r.ok ? '' : r.reason, reason, id);
    }
  });

  it('never fetches a document from a loopback or private address', async () => {
    for (const url of [
      `https://127.0.0.1:${port}/c.json`,
      `https://localhost:${port}/c.json`,
      'https://10.0.0.1/c.json',
    ]) {
      await assert.rejects(fetchPublicMetadata(new URL(url)), /resolves to .*(loopback|private)/, url);
    }
  });
});
