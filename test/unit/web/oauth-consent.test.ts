import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { authorizeUrl, consent, pkcePair, registeredClientId } from '../../helpers/oauth.js';
import { type DockServer, startDockServer } from './harness.js';

const DOC_URL = 'https://app.example/oauth/client.json';
const DOC_REDIRECT = 'https://app.example/callback';

describe('the consent page', () => {
  let server: DockServer;
  let cookie: string;

  before(async () => {
    server = await startDockServer({
      oauthMetadata: async (url) => {
        if (url.href !== DOC_URL) throw new Error('no such document');
        return { client_id: DOC_URL, client_name: 'Example App', redirect_uris: [DOC_REDIRECT] };
      },
    });
    cookie = await server.login();
  });
  after(() => server.close());

  const page = async (clientId: string, redirectUri: string) => {
    const res = await fetch(authorizeUrl(server.base, { clientId, redirectUri }), {
      headers: { cookie, accept: 'text/html' },
    });
    assert.equal(res.status, 200);
    return { html: await res.text(), csp: res.headers.get('content-security-policy') ?? '' };
  };

  it('shows a client known by its metadata document as verified, with the document URL', async () => {
    const { html, csp } = await page(DOC_URL, DOC_REDIRECT);
    assert.match(
      html,
      /id="verified">verified<\/span> the metadata document at <code>https:\/\/app\.example\/oauth\/client\.json/,
    );
    assert.match(html, /id="client-name">Example App</);
    assert.match(html, new RegExp(`id="redirect-uri">${DOC_REDIRECT}<`));
    assert.match(
      csp,
      /form-action 'self' https:\/\/app\.example;/,
      'the answer may go to the redirect origin only',
    );
    assert.match(csp, /frame-ancestors 'none'/);
  });

  it('shows a self-registered client as not verified, and escapes the name it chose', async () => {
    const res = await fetch(`${server.base}/oauth/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        client_name: '<img src=x onerror=alert(1)>',
        redirect_uris: ['http://127.0.0.1:9/callback'],
      }),
    });
    const { client_id } = (await res.json()) as { client_id: string };
    const { html } = await page(client_id, 'http://127.0.0.1:9/callback');
    assert.match(html, /id="verified">not verified</);
    assert.ok(!html.includes('<img src=x'), 'the name is escaped');
  });

  it('approves a metadata-document client and answers its redirect URI with a code, the state and the issuer', async () => {
    const answer = await consent(server.base, cookie, {
      clientId: DOC_URL,
      redirectUri: DOC_REDIRECT,
      challenge: pkcePair().challenge,
      state: 'abc',
    });
    assert.ok(answer.get('code'));
    assert.equal(answer.get('state'), 'abc');
    assert.equal(answer.get('iss'), server.base);
  });

  it('refuses a metadata-document client_id whose document cannot be fetched, without redirecting', async () => {
    const res = await fetch(
      authorizeUrl(server.base, { clientId: 'https://gone.example/c.json', redirectUri: DOC_REDIRECT }),
      {
        headers: { cookie, accept: 'text/html' },
        redirect: 'manual',
      },
    );
    assert.equal(res.status, 400);
    assert.match(await res.text(), /invalid_client: The client metadata document could not be fetched/);
    assert.ok(await registeredClientId(server.base), 'registration still works');
  });
});
