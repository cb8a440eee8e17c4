/**
 * A hand-driven OAuth client for tests of the authorization server's refusals: register,
 * sign in to the dock with a fresh login link, answer the consent page as a browser would
 * (same-origin form POST), exchange codes. The happy path of a real client is tested with the
 * MCP SDK's OAuth provider and Chromium (test/e2e).
 */
import { createHash, randomBytes } from 'node:crypto';
import { runCli, type ServeProcess, type TempProject } from './paddock-process.js';

export const REDIRECT = 'http://127.0.0.1:9/callback';

export function pkcePair(): { verifier: string; challenge: string } {
  const verifier = randomBytes(32).toString('base64url');
  return { verifier, challenge: createHash('sha256').update(verifier).digest('base64url') };
}

export async function register(base: string, body: Record<string, unknown> = {}): Promise<Response> {
  return fetch(`${base}/oauth/register`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ client_name: 'Raw test client', redirect_uris: [REDIRECT], ...body }),
  });
}

export async function registeredClientId(base: string, name?: string): Promise<string> {
  const res = await register(base, name === undefined ? {} : { client_name: name });
  if (res.status !== 201) throw new Error(`registration failed: ${res.status} ${await res.text()}`);
  return ((await res.json()) as { client_id: string }).client_id;
}

/** A dock session cookie, from a login link the server issues to its token holder. */
export async function dockCookie(serve: ServeProcess, base = serve.url): Promise<string> {
  const link = await fetch(`${base}/login/link`, {
    method: 'POST',
    headers: { authorization: `Bearer ${serve.token}` },
  });
  const { url } = (await link.json()) as { url: string };
  const login = await fetch(url.replace(/^http:\/\/[^/]+/, base), { redirect: 'manual' });
  const cookie = login.headers.get('set-cookie');
  if (!cookie) throw new Error(`no session cookie: ${login.status}`);
  return cookie.split(';')[0]!;
}

export interface AuthorizeParams {
  clientId: string;
  redirectUri?: string;
  challenge?: string | null;
  method?: string | null;
  scope?: string;
  resource?: string;
  state?: string;
}

export function authorizeUrl(base: string, p: AuthorizeParams): string {
  const q = new URLSearchParams({
    response_type: 'code',
    client_id: p.clientId,
    redirect_uri: p.redirectUri ?? REDIRECT,
  });
  if (p.challenge !== null) q.set('code_challenge', p.challenge ?? pkcePair().challenge);
  if (p.method !== null) q.set('code_challenge_method', p.method ?? 'S256');
  if (p.scope !== undefined) q.set('scope', p.scope);
  if (p.resource !== undefined) q.set('resource', p.resource);
  q.set('state', p.state ?? 'st-1');
  return `${base}/oauth/authorize?${q}`;
}

/** Opens the consent page and answers it; returns the redirect's query (code or error). */
export async function consent(
  base: string,
  cookie: string,
  p: AuthorizeParams,
  decision: 'approve' | 'deny' = 'approve',
): Promise<URLSearchParams> {
  const page = await fetch(authorizeUrl(base, p), {
    headers: { cookie, accept: 'text/html' },
    redirect: 'manual',
  });
  if (page.status === 303) return new URL(page.headers.get('location')!).searchParams;
  const html = await page.text();
  const request = /name="request" value="([^"]+)"/.exec(html)?.[1];
  if (!request) throw new Error(`no consent form (${page.status}): ${html.slice(0, 400)}`);
  const form = new URLSearchParams({ request, decision });
  // as a browser does: the named computers left ticked go with the form
  for (const m of html.matchAll(/name="computer" value="([^"]+)" checked/g)) form.append('computer', m[1]!);
  const answer = await fetch(`${base}/oauth/authorize`, {
    method: 'POST',
    redirect: 'manual',
    headers: { cookie, origin: base, 'content-type': 'application/x-www-form-urlencoded' },
    body: form,
  });
  if (answer.status !== 303) throw new Error(`consent answered ${answer.status}: ${await answer.text()}`);
  return new URL(answer.headers.get('location')!).searchParams;
}

export async function tokenRequest(base: string, form: Record<string, string>): Promise<Response> {
  return fetch(`${base}/oauth/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams(form),
  });
}

export interface Tokens {
  access_token: string;
  refresh_token: string;
  expires_in: number;
  scope: string;
}

/** Register, approve and exchange: a fresh grant's tokens. */
export async function grantTokens(
  serve: ServeProcess,
  options: { base?: string; scope?: string; name?: string } = {},
): Promise<{ clientId: string; tokens: Tokens }> {
  const base = options.base ?? serve.url;
  const clientId = await registeredClientId(base, options.name);
  const { verifier, challenge } = pkcePair();
  const cookie = await dockCookie(serve, base);
  const answer = await consent(base, cookie, {
    clientId,
    challenge,
    ...(options.scope === undefined ? {} : { scope: options.scope }),
  });
  const code = answer.get('code');
  if (!code) throw new Error(`no code: ${answer}`);
  const res = await tokenRequest(base, {
    grant_type: 'authorization_code',
    code,
    client_id: clientId,
    redirect_uri: REDIRECT,
    code_verifier: verifier,
  });
  if (res.status !== 200) throw new Error(`token exchange failed: ${res.status} ${await res.text()}`);
  return { clientId, tokens: (await res.json()) as Tokens };
}

export const INIT_BODY = JSON.stringify({
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
});

/** POSTs initialize to /mcp with this bearer token. */
export function mcpInit(base: string, token: string, scheme = 'Bearer'): Promise<Response> {
  return fetch(`${base}/mcp`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      authorization: `${scheme} ${token}`,
    },
    body: INIT_BODY,
  });
}

/** The caller of the audit row of a `tool` call whose input contains `marker`. */
export async function auditCallerOf(project: TempProject, tool: string, marker: string): Promise<string> {
  const audit = await runCli(project, ['audit', '--tool', tool, '--json']);
  const row = audit.stdout
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as { caller: string; input: string })
    .find((r) => r.input.includes(marker));
  return row?.caller ?? '';
}

/** Paddock's id (`cl_…`) of the client registered as `clientId`, from `paddock clients list`. */
export async function paddockClientId(project: TempProject, clientId: string): Promise<string> {
  const list = await runCli(project, ['clients', 'list', '--json']);
  const row = list.stdout
    .trim()
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as { id: string; clientId: string })
    .find((r) => r.clientId === clientId);
  if (!row) throw new Error(`client ${clientId} is not listed: ${list.stdout}${list.stderr}`);
  return row.id;
}
