/**
 * `/clients`: the dock's list of MCP clients a person approved, each with its scopes and last
 * use, and a Revoke button (a same-origin POST with a single-use nonce bound to the session).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from '../../shared/logger.js';
import type { OAuthGrant, OAuthStore } from '../../store/oauth.js';
import { SESSION_COOKIE, type WebRoute } from '../app.js';
import { readCookie } from '../auth.js';
import { escapeHtml, sendPage } from '../dock/html.js';
import { type LaunchNonces, readForm, sameOriginPost } from '../dock/launch-page.js';
import type { ConsentSessions } from './authorize.js';

export const CLIENTS_PATH = '/clients';
const NONCE_KEY = 'clients';

export interface ClientsPageOptions {
  store: OAuthStore;
  sessions: ConsentSessions;
  nonces: LaunchNonces;
  logger: Logger;
  /** Called with the grant ids a revocation ended (their MCP sessions close). */
  onRevoked(grantIds: readonly string[]): void;
}

function when(ms: number | null): string {
  return ms === null ? 'never' : new Date(ms).toISOString().replace('T', ' ').slice(0, 19);
}

function row(g: OAuthGrant, nonce: string): string {
  return `<tr data-client="${escapeHtml(g.client.id)}"><td>${escapeHtml(g.client.name)}<br><code>${escapeHtml(g.client.id)}</code></td>
<td>${g.scopes.map((s) => `<code>${escapeHtml(s)}</code>`).join(' ')}</td><td>${when(g.grantedAt)}</td><td>${when(g.lastUsedAt)}</td>
<td><form method="post" action="${CLIENTS_PATH}"><input type="hidden" name="nonce" value="${escapeHtml(nonce)}">
<button type="submit" name="client" value="${escapeHtml(g.client.id)}">Revoke</button></form></td></tr>`;
}

/** The clients page and its revoke action (needs a dock session: not public). */
export function clientsRoute(options: ClientsPageOptions): WebRoute {
  const handleOf = (req: IncomingMessage) => {
    const cookie = readCookie(req.headers.cookie, SESSION_COOKIE);
    return cookie ? options.sessions.sessionHandle(cookie) : 'token';
  };
  const show = async (req: IncomingMessage, res: ServerResponse, status: number, note: string | null) => {
    const grants = await options.store.liveGrants();
    const handle = handleOf(req);
    const rows = grants.map((g) => row(g, options.nonces.issue(NONCE_KEY, handle))).join('');
    sendPage(
      res,
      status,
      'Clients',
      `<h1>MCP clients signed in with OAuth</h1>
${note ? `<p class="note" role="status">${escapeHtml(note)}</p>` : ''}
${
  grants.length === 0
    ? '<p id="no-clients">No client holds a grant. Clients that sign in appear here after you approve them.</p>'
    : `<table id="clients"><thead><tr><th>Client</th><th>Scopes</th><th>Approved</th><th>Last used</th><th></th></tr></thead><tbody>${rows}</tbody></table>`
}
<p class="note">Revoking ends the client's sessions at once; it must ask again to come back. From a shell: <code>paddock clients list</code>, <code>paddock clients revoke ID</code>.</p>
<p><a href="/">Back to the dock</a></p>`,
    );
  };
  return {
    match: (req, url) => url.pathname === CLIENTS_PATH && (req.method === 'GET' || req.method === 'POST'),
    async handle(req, res) {
      if (req.method === 'GET') return show(req, res, 200, null);
      const form = sameOriginPost(req) ? await readForm(req) : null;
      const nonce = form?.get('nonce') ?? '';
      if (!form || !nonce || !options.nonces.consume(nonce, NONCE_KEY, handleOf(req))) {
        return show(
          req,
          res,
          403,
          'That revocation came from an old or foreign page; nothing changed. Try again here.',
        );
      }
      const id = form.get('client') ?? '';
      const ended = await options.store.revokeClient(id);
      options.onRevoked(ended);
      options.logger.info('oauth.client_revoked', { client: id, grants: ended.length, by: 'dock' });
      await show(
        req,
        res,
        200,
        ended.length ? `Revoked ${id}; its sessions ended.` : `${id} held no live grant.`,
      );
    },
  };
}
