/**
 * Paddock's OAuth authorization server against a real `paddock serve`: metadata, the refusals
 * the specification names (each logged), token lifetimes, audience, rotation, revocation and
 * scope narrowing. The browser flow with the MCP SDK client is in test/e2e/mcp-oauth.test.ts.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import {
  auditCallerOf,
  authorizeUrl,
  consent,
  dockCookie,
  grantTokens,
  mcpInit,
  pkcePair,
  REDIRECT,
  register,
  registeredClientId,
  tokenRequest,
} from '../helpers/oauth.js';
import {
  runCli,
  type ServeProcess,
  startServe,
  type TempProject,
  tempProject,
} from '../helpers/paddock-process.js';
import { pollUntil } from '../helpers/poll.js';

async function connectWith(base: string, token: string): Promise<Client> {
  const client = new Client({ name: 'oauth-raw', version: '1.0.0' });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(`${base}/mcp`), {
      requestInit: { headers: { authorization: `Bearer ${token}` } },
    }),
  );
  return client;
}

describe('OAuth sign-in of MCP clients (paddock serve)', () => {
  let project: TempProject;
  let serve: ServeProcess;

  before(async () => {
    project = tempProject('server:\n  oauth:\n    registrationsPerMinute: 40\n');
    serve = await startServe(project);
  });
  after(async () => {
    await serve?.stop();
    project?.cleanup();
  });

  it('publishes resource and server metadata, and names the resource metadata in a 401 from /mcp', async () => {
    const prm = (await (
      await fetch(`${serve.url}/.well-known/oauth-protected-resource/mcp`)
    ).json()) as Record<string, unknown>;
    assert.equal(prm.resource, `${serve.url}/mcp`);
    assert.deepEqual(prm.authorization_servers, [serve.url]);
    const as = (await (await fetch(`${serve.url}/.well-known/oauth-authorization-server`)).json()) as Record<
      string,
      unknown
    >;
    assert.equal(as.issuer, serve.url);
    assert.deepEqual(as.code_challenge_methods_supported, ['S256']);
    assert.equal(as.client_id_metadata_document_supported, true);
    assert.equal(as.registration_endpoint, `${serve.url}/oauth/register`);
    const preflight = await fetch(`${serve.url}/oauth/token`, {
      method: 'OPTIONS',
      headers: { origin: 'http://localhost:6274', 'access-control-request-method': 'POST' },
    });
    assert.equal(preflight.status, 204, 'a browser-based client may call the token endpoint');
    assert.equal(preflight.headers.get('access-control-allow-origin'), '*');
    const foreign = await fetch(`${serve.url}/mcp`, {
      method: 'POST',
      body: '{}',
      headers: { origin: 'http://localhost:6274' },
    });
    assert.equal(foreign.status, 403, '/mcp itself still serves no other origin');
    const res = await fetch(`${serve.url}/mcp`, { method: 'POST', body: '{}' });
    assert.equal(res.status, 401);
    assert.match(
      res.headers.get('www-authenticate') ?? '',
      new RegExp(`^Bearer resource_metadata="${serve.url}/.well-known/oauth-protected-resource"`),
    );
  });

  it('shows a redirect URI the client did not register as an error page, never redirecting to it', async () => {
    const clientId = await registeredClientId(serve.url);
    const cookie = await dockCookie(serve);
    const res = await fetch(authorizeUrl(serve.url, { clientId, redirectUri: 'https://evil.example/cb' }), {
      headers: { cookie, accept: 'text/html' },
      redirect: 'manual',
    });
    assert.equal(res.status, 400);
    assert.equal(res.headers.get('location'), null);
    assert.match(await res.text(), /invalid_request: redirect_uri is not one this client registered/);
  });

  it('refuses a missing or plain PKCE challenge with invalid_request at the redirect URI', async () => {
    const clientId = await registeredClientId(serve.url);
    const cookie = await dockCookie(serve);
    for (const params of [
      { clientId, challenge: null, method: null },
      { clientId, method: 'plain' },
      { clientId, method: null },
    ]) {
      const answer = await consent(serve.url, cookie, params);
      assert.equal(answer.get('error'), 'invalid_request', JSON.stringify(params));
      assert.equal(answer.get('code'), null);
      assert.equal(answer.get('state'), 'st-1');
      assert.equal(answer.get('iss'), serve.url);
    }
  });

  it('answers a consent page opened without a dock session with the sign-in page, framed by no one', async () => {
    const clientId = await registeredClientId(serve.url);
    const res = await fetch(authorizeUrl(serve.url, { clientId }), { headers: { accept: 'text/html' } });
    assert.equal(res.status, 401);
    assert.match(await res.text(), /Sign in to the dock first/);
    const cookie = await dockCookie(serve);
    const page = await fetch(authorizeUrl(serve.url, { clientId }), {
      headers: { cookie, accept: 'text/html' },
    });
    assert.equal(page.status, 200);
    assert.match(page.headers.get('content-security-policy') ?? '', /frame-ancestors 'none'/);
    assert.equal(page.headers.get('x-frame-options'), 'DENY');
    const forged = await fetch(`${serve.url}/oauth/authorize`, {
      method: 'POST',
      redirect: 'manual',
      headers: { cookie, 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ request: 'x', decision: 'approve' }),
    });
    assert.equal(forged.status, 403, 'a decision without this origin is refused');
  });

  it('redirects a denial with access_denied and grants nothing', async () => {
    const clientId = await registeredClientId(serve.url);
    const answer = await consent(serve.url, await dockCookie(serve), { clientId }, 'deny');
    assert.equal(answer.get('error'), 'access_denied');
    assert.equal(answer.get('code'), null);
    const list = await runCli(project, ['clients', 'list', '--json']);
    assert.ok(!list.stdout.includes(clientId), list.stdout);
  });

  it('refuses a wrong code_verifier, then a reused code, and revokes what the code gave', async () => {
    const clientId = await registeredClientId(serve.url);
    const { verifier, challenge } = pkcePair();
    const code = (await consent(serve.url, await dockCookie(serve), { clientId, challenge })).get('code')!;
    const exchange = (v: string) =>
      tokenRequest(serve.url, {
        grant_type: 'authorization_code',
        code,
        client_id: clientId,
        redirect_uri: REDIRECT,
        code_verifier: v,
      });
    const wrong = await exchange(pkcePair().verifier);
    assert.equal(wrong.status, 400);
    assert.equal(((await wrong.json()) as { error: string }).error, 'invalid_grant');
    // the wrong verifier used the code up: the right one is now a reuse
    const reused = await exchange(verifier);
    assert.equal(((await reused.json()) as { error: string }).error, 'invalid_grant');

    const second = await grantTokens(serve);
    const firstCode = await (async () => {
      const p = pkcePair();
      const c = (
        await consent(serve.url, await dockCookie(serve), {
          clientId: second.clientId,
          challenge: p.challenge,
        })
      ).get('code')!;
      const form = {
        grant_type: 'authorization_code',
        code: c,
        client_id: second.clientId,
        redirect_uri: REDIRECT,
        code_verifier: p.verifier,
      };
      const ok = (await (await tokenRequest(serve.url, form)).json()) as { access_token: string };
      const again = await tokenRequest(serve.url, form);
      assert.equal(((await again.json()) as { error: string }).error, 'invalid_grant');
      return ok.access_token;
    })();
    assert.equal((await mcpInit(serve.url, firstCode)).status, 401, 'tokens of a reused code stop working');
    assert.match(serve.stderr(), /oauth\.refused/);
  });

  it('rotates refresh tokens and ends the grant when a rotated-out one comes back', async () => {
    const { clientId, tokens } = await grantTokens(serve);
    const refresh = (token: string) =>
      tokenRequest(serve.url, { grant_type: 'refresh_token', refresh_token: token, client_id: clientId });
    const next = (await (await refresh(tokens.refresh_token)).json()) as {
      access_token: string;
      refresh_token: string;
    };
    assert.notEqual(next.refresh_token, tokens.refresh_token);
    assert.equal((await mcpInit(serve.url, next.access_token)).status, 200);
    const replay = await refresh(tokens.refresh_token);
    assert.equal(((await replay.json()) as { error: string }).error, 'invalid_grant');
    assert.equal((await mcpInit(serve.url, next.access_token)).status, 401, 'the whole grant ended');
    assert.equal(
      ((await (await refresh(next.refresh_token)).json()) as { error: string }).error,
      'invalid_grant',
    );
  });

  it('revokes through the revocation endpoint: a refresh token ends its grant, another client cannot', async () => {
    const { clientId, tokens } = await grantTokens(serve);
    const revoke = (form: Record<string, string>) =>
      fetch(`${serve.url}/oauth/revoke`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams(form),
      });
    const other = await registeredClientId(serve.url);
    assert.equal((await revoke({ token: tokens.refresh_token, client_id: other })).status, 401);
    assert.equal(
      (await mcpInit(serve.url, tokens.access_token)).status,
      200,
      'a foreign client revoked nothing',
    );
    assert.equal((await revoke({ token: tokens.refresh_token, client_id: clientId })).status, 200);
    assert.equal((await mcpInit(serve.url, tokens.access_token)).status, 401, 'the grant ended');
    assert.equal(
      (await revoke({ token: 'unknown', client_id: clientId })).status,
      200,
      'RFC 7009: unknown is fine',
    );
  });

  it('refuses a token issued for another resource (audience), with invalid_token', async () => {
    const other = serve.url.replace('127.0.0.1', 'localhost');
    const { tokens } = await grantTokens(serve, { base: other });
    assert.equal((await mcpInit(other, tokens.access_token)).status, 200);
    const res = await mcpInit(serve.url, tokens.access_token);
    assert.equal(res.status, 401);
    assert.match(res.headers.get('www-authenticate') ?? '', /error="invalid_token"/);
    const wrongTarget = await consent(serve.url, await dockCookie(serve), {
      clientId: await registeredClientId(serve.url),
      resource: `${other}/mcp`,
    });
    assert.equal(wrongTarget.get('error'), 'invalid_target');
  });

  it('narrows the tools a grant sees to its scopes and audits its calls as mcp:<client>:<session>', async () => {
    const { tokens } = await grantTokens(serve, { scope: 'tools' });
    assert.equal(tokens.scope, 'tools');
    const client = await connectWith(serve.url, tokens.access_token);
    try {
      const names = (await client.listTools()).tools.map((t) => t.name);
      assert.ok(names.includes('save_memory'));
      assert.ok(!names.includes('launch_computer'), names.join(','));
      const r = await client.callTool({ name: 'save_memory', arguments: { content: 'scoped-call-marker' } });
      assert.notEqual(r.isError, true);
      await assert.rejects(
        client.callTool({ name: 'launch_computer', arguments: { profileId: 'shell' } }),
        /Unknown tool/,
      );
    } finally {
      await client.close();
    }
    const caller = await auditCallerOf(project, 'save_memory', 'scoped-call-marker');
    assert.match(caller, /^mcp:cl_[A-Za-z0-9_-]+:[0-9a-f-]{36}$/);
  });

  it('ends the sessions and tokens of a client revoked with paddock clients revoke', async () => {
    const { tokens } = await grantTokens(serve);
    const client = await connectWith(serve.url, tokens.access_token);
    await client.listTools();
    const list = await runCli(project, ['clients', 'list', '--json']);
    const id = list.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { id: string; lastUsedAt: string })
      .find((r) => r.lastUsedAt !== 'never')?.id;
    assert.ok(id, list.stdout);
    const revoked = await runCli(project, ['clients', 'revoke', id]);
    assert.equal(revoked.code, 0, revoked.stderr);
    assert.equal((await mcpInit(serve.url, tokens.access_token)).status, 401);
    await pollUntil(() => /mcp\.session_revoked/.test(serve.stderr()), 'the revoked session to close');
    await client.close().catch(() => undefined);
  });

  it('bounds a flood of registrations with 429 and logs the refusals', async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 45; i++) statuses.push((await register(serve.url)).status);
    assert.ok(statuses.includes(429), statuses.join(','));
    assert.ok(statuses.slice(statuses.indexOf(429)).every((s) => s === 429));
    const bad = await register(serve.url, { redirect_uris: ['http://evil.example/cb'] });
    assert.ok([400, 429].includes(bad.status));
  });
});

describe('OAuth access tokens expire', () => {
  it('refuses an expired access token with invalid_token while its refresh token still works', async () => {
    const project = tempProject('server:\n  oauth:\n    accessTokenTtlSeconds: 1\n');
    const serve = await startServe(project);
    try {
      const { clientId, tokens } = await grantTokens(serve);
      const refused = await pollUntil(async () => {
        const res = await mcpInit(serve.url, tokens.access_token);
        return res.status === 401 ? res : null;
      }, 'the access token to expire');
      assert.ok(refused);
      assert.match(
        refused.headers.get('www-authenticate') ?? '',
        /error="invalid_token", error_description="The access token expired/,
      );
      const res = await tokenRequest(serve.url, {
        grant_type: 'refresh_token',
        refresh_token: tokens.refresh_token,
        client_id: clientId,
      });
      assert.equal(res.status, 200);
      const fresh = (await res.json()) as { access_token: string };
      assert.equal(
        (await mcpInit(serve.url, fresh.access_token, 'bearer')).status,
        200,
        'lower-case bearer too',
      );
    } finally {
      await serve.stop();
      project.cleanup();
    }
  });
});
