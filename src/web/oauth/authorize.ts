/**
 * The authorization endpoint: checks the request (client, exact redirect URI, PKCE S256,
 * scopes, resource), then shows the person signed in to the dock a consent page. Only their
 * approval (a same-origin POST with a single-use nonce bound to their session) creates a grant
 * and a code. Errors that cannot be trusted to the redirect URI are shown, never redirected.
 */
import { randomBytes } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { computerNameProblem } from '../../shared/computer-name.js';
import type { Logger } from '../../shared/logger.js';
import { COMPUTER_SCOPE_PREFIX, computersOfScopes } from '../../shared/principal.js';
import { SESSION_COOKIE, type WebRoute } from '../app.js';
import { readCookie } from '../auth.js';
import { escapeHtml, PAGE_CSP, sendPage } from '../dock/html.js';
import { readForm, sameOriginPost } from '../dock/launch-page.js';
import { sendSignIn } from '../dock/routes.js';
import type { ClientResolver, ResolvedClient } from './client-metadata.js';
import { OAUTH_PATHS, resourceOf, SCOPE_TEXT, SCOPES, type Scope } from './protocol.js';
import type { OAuthServer } from './server.js';

/** The dock's sign-in sessions, as far as consent needs them. */
export interface ConsentSessions {
  valid(secret: string): boolean;
  sessionHandle(secret: string): string;
}

interface Pending {
  client: ResolvedClient;
  redirectUri: string;
  state: string | null;
  codeChallenge: string;
  scopes: Scope[];
  /** Named computers the client asked for (`computer:<name>`); the person ticks which to grant. */
  computers: string[];
  resource: string;
  issuer: string;
  session: string;
  expiresAt: number;
}

const PENDING_TTL_MS = 10 * 60_000;
const MAX_PENDING = 256;

export interface AuthorizeOptions {
  server: OAuthServer;
  clients: ClientResolver;
  sessions: ConsentSessions;
  logger: Logger;
  now?: () => number;
}

/** GET shows the consent page, POST records the person's decision. */
export function authorizeRoute(options: AuthorizeOptions): WebRoute {
  const pending = new Map<string, Pending>();
  const now = options.now ?? Date.now;
  const { logger } = options;
  const refuse = (res: ServerResponse, status: number, error: string, reason: string, fields = {}) => {
    logger.warn('oauth.refused', { endpoint: 'authorize', error, reason, ...fields });
    sendPage(
      res,
      status,
      'Authorization refused',
      `<h1>This sign-in request cannot go on</h1><p class="err" id="oauth-error">${escapeHtml(error)}: ${escapeHtml(reason)}</p><p class="note">Nothing was granted. Start the sign-in again from the client.</p>`,
    );
  };
  const redirect = (
    res: ServerResponse,
    p: Omit<Pending, 'session' | 'expiresAt' | 'client'>,
    params: Record<string, string>,
  ) => {
    const url = new URL(p.redirectUri);
    for (const [k, v] of Object.entries(params)) url.searchParams.set(k, v);
    if (p.state !== null) url.searchParams.set('state', p.state);
    url.searchParams.set('iss', p.issuer);
    res.writeHead(303, { location: url.toString(), 'cache-control': 'no-store' });
    res.end();
  };
  const sessionOf = (req: IncomingMessage): string | null => {
    const cookie = readCookie(req.headers.cookie, SESSION_COOKIE);
    return cookie && options.sessions.valid(cookie) ? options.sessions.sessionHandle(cookie) : null;
  };

  async function show(req: IncomingMessage, res: ServerResponse, url: URL): Promise<void> {
    const q = url.searchParams;
    const clientId = q.get('client_id') ?? '';
    const redirectUri = q.get('redirect_uri') ?? '';
    // nothing is looked up or fetched for a visitor who is not signed in to the dock
    const session = sessionOf(req);
    if (!session) {
      logger.warn('oauth.refused', {
        endpoint: 'authorize',
        error: 'login_required',
        reason: 'no dock session',
        clientId: clientId.slice(0, 200),
      });
      return sendPage(
        res,
        401,
        'Sign in',
        `<h1>Sign in to the dock first</h1><p>Only the person signed in to this dock can approve a client. Open the login link that <code>paddock serve</code> printed, then come back to this request.</p>
<p>Already signed in? A page of another site that sent you here cannot carry your sign-in: <a href="${escapeHtml(url.pathname + url.search)}" id="continue">continue here</a>.</p>`,
      );
    }
    const resolved = await options.clients.resolve(clientId);
    if (!resolved.ok)
      return refuse(res, 400, 'invalid_client', resolved.reason, { clientId: clientId.slice(0, 200) });
    const client = resolved.client;
    const fields = { client: client.client.id };
    if (!client.client.redirectUris.includes(redirectUri)) {
      return refuse(res, 400, 'invalid_request', 'redirect_uri is not one this client registered.', {
        ...fields,
        redirectUri: redirectUri.slice(0, 200),
      });
    }
    const issuer = options.server.issuer(req);
    const base = {
      redirectUri,
      state: q.get('state'),
      issuer,
      codeChallenge: '',
      scopes: [] as Scope[],
      computers: [] as string[],
      resource: '',
    };
    const fail = (error: string, description: string) => {
      logger.warn('oauth.refused', { endpoint: 'authorize', error, reason: description, ...fields });
      redirect(res, base, { error, error_description: description });
    };
    if (q.get('response_type') !== 'code')
      return fail('unsupported_response_type', 'response_type must be code.');
    const codeChallenge = q.get('code_challenge') ?? '';
    if (!/^[A-Za-z0-9_-]{43}$/.test(codeChallenge)) {
      return fail('invalid_request', 'A PKCE code_challenge (S256, 43 characters) is required.');
    }
    if (q.get('code_challenge_method') !== 'S256') {
      return fail('invalid_request', 'code_challenge_method must be S256; plain is not accepted.');
    }
    const all = (q.get('scope') ?? '').split(' ').filter(Boolean);
    const computers = [...new Set(computersOfScopes(all))];
    const badComputer = computers.find((c) => computerNameProblem(c) !== null);
    if (badComputer !== undefined)
      return fail('invalid_scope', computerNameProblem(badComputer)!.slice(0, 300));
    const asked = all.filter((s) => !s.startsWith(COMPUTER_SCOPE_PREFIX));
    const unknown = asked.filter((s) => !(SCOPES as string[]).includes(s) && s !== 'offline_access');
    if (unknown.length > 0)
      return fail(
        'invalid_scope',
        `Unknown scope ${unknown.join(', ')}; use ${SCOPES.join(', ')} or computer:<name>.`,
      );
    const toolsets = asked.filter((s) => s !== 'offline_access');
    const scopes = SCOPES.filter((s) => toolsets.length === 0 || asked.includes(s));
    if (scopes.length === 0) return fail('invalid_scope', `Ask for at least one of ${SCOPES.join(', ')}.`);
    const resource = q.get('resource') ?? resourceOf(issuer);
    if (resource !== resourceOf(issuer))
      return fail('invalid_target', `resource must be ${resourceOf(issuer)}.`);

    const id = randomBytes(18).toString('base64url');
    pending.set(id, {
      ...base,
      client,
      codeChallenge,
      scopes,
      computers,
      resource,
      session,
      expiresAt: now() + PENDING_TTL_MS,
    });
    while (pending.size > MAX_PENDING) pending.delete(pending.keys().next().value!);
    sendPage(res, 200, 'Sign-in request', renderConsent(id, client, redirectUri, scopes, computers), {
      'content-security-policy': consentCsp(redirectUri),
    });
  }

  async function decide(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const session = sessionOf(req);
    if (!session) return sendSignIn(req, res, 'Sign in to the dock first; nothing was granted.');
    if (!sameOriginPost(req))
      return refuse(res, 403, 'access_denied', 'The decision must come from the consent page itself.');
    const form = await readForm(req);
    const id = form?.get('request') ?? '';
    const p = pending.get(id);
    pending.delete(id);
    if (!p || p.session !== session || p.expiresAt <= now()) {
      return refuse(res, 400, 'invalid_request', 'This consent page expired or was already answered.');
    }
    const fields = { client: p.client.client.id };
    if (form?.get('decision') !== 'approve') {
      logger.info('oauth.denied', fields);
      return redirect(res, p, {
        error: 'access_denied',
        error_description: 'The person denied the request.',
      });
    }
    // only the named computers the person left ticked are granted
    const ticked = new Set(form.getAll('computer'));
    const computers = p.computers.filter((c) => ticked.has(c)).map((c) => `${COMPUTER_SCOPE_PREFIX}${c}`);
    const grant = await options.server.store.createGrant(
      p.client.client,
      [...p.scopes, ...computers],
      p.resource,
    );
    const code = await options.server.store.issue(grant.id, 'code', options.server.limits.codeTtlMs, {
      redirectUri: p.redirectUri,
      codeChallenge: p.codeChallenge,
    });
    logger.info('oauth.granted', { ...fields, grant: grant.id, scopes: grant.scopes.join(' ') });
    redirect(res, p, { code: code.secret });
  }

  return {
    public: true,
    match: (req, url) =>
      url.pathname === OAUTH_PATHS.authorize && (req.method === 'GET' || req.method === 'POST'),
    handle: (req, res, url) => (req.method === 'POST' ? decide(req, res) : show(req, res, url)),
  };
}

/**
 * The page CSP, with the redirect URI's origin (or private scheme) allowed as a form target:
 * browsers apply form-action to the redirect that answers the form, too.
 */
function consentCsp(redirectUri: string): string {
  const url = new URL(redirectUri);
  const target = url.protocol === 'http:' || url.protocol === 'https:' ? url.origin : url.protocol;
  return PAGE_CSP.replace("form-action 'self'", `form-action 'self' ${target}`);
}

/** The consent page: who asks, where the answer goes, whether that is verified, and what for. */
function renderConsent(
  id: string,
  resolved: ResolvedClient,
  redirectUri: string,
  scopes: readonly Scope[],
  computers: readonly string[],
): string {
  const { client, verified } = resolved;
  const identity = client.metadataUrl
    ? verified
      ? `<span class="badge ok" id="verified">verified</span> the metadata document at <code>${escapeHtml(client.metadataUrl)}</code> names this client and its redirect URIs`
      : '<span class="badge no" id="verified">not verified</span>'
    : '<span class="badge no" id="verified">not verified</span> the client registered itself; its name is its own claim';
  return `<h1>Allow <span id="client-name">${escapeHtml(client.name)}</span> to use this Paddock?</h1>
<p>An MCP client asks to act through this server's tools. Its calls are audited under its own name and pass the same permissions and policy as yours; it keeps memories of its own, its <code>ask</code> calls wait for you in the dock or the CLI, and of your computers it reaches only those you tick below.</p>
<dl>
<dt>Client</dt><dd>${escapeHtml(client.name)} <code>${escapeHtml(client.clientId)}</code></dd>
<dt>Identity</dt><dd>${identity}</dd>
<dt>Answer goes to</dt><dd><code id="redirect-uri">${escapeHtml(redirectUri)}</code></dd>
<dt>Access</dt><dd><ul id="scopes">${scopes.map((s) => `<li><code>${s}</code>: ${escapeHtml(SCOPE_TEXT[s])}</li>`).join('')}</ul></dd>
<dt>Computers</dt><dd>${
    computers.length === 0
      ? '<span id="no-computers">Only computers of its own; none of yours.</span>'
      : `Its own computers, and of yours only those you tick:<ul id="computers">${computers
          .map(
            (c) =>
              `<li><label><input type="checkbox" form="consent" name="computer" value="${escapeHtml(c)}" checked> <code>computer:${escapeHtml(c)}</code>: use your named computer ${escapeHtml(c)} (its files, commands and terminals)</label></li>`,
          )
          .join('')}</ul>`
  }</dd>
</dl>
<p class="note">You can revoke it at any time under Clients in the dock, or with <code>paddock clients revoke ${escapeHtml(client.id)}</code>.</p>
<form method="post" action="${OAUTH_PATHS.authorize}" class="row" id="consent">
<input type="hidden" name="request" value="${escapeHtml(id)}">
<button type="submit" name="decision" value="approve" id="approve">Approve</button>
<button type="submit" name="decision" value="deny" id="deny" style="background:#2b3440;color:var(--text)">Deny</button>
</form>`;
}
