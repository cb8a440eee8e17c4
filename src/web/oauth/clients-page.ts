/**
 * `/clients`: the dock's list of MCP clients a person approved, each with its scopes, the named
 * computers it may use, and its last use. The person can open one of their named computers to
 * a client or close it again, and revoke a client, which ends everything of it. Every action is
 * a same-origin POST with a single-use nonce bound to the dock session.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { computerNameProblem } from '../../shared/computer-name.js';
import type { Logger } from '../../shared/logger.js';
import { COMPUTER_SCOPE_PREFIX, computersOfScopes } from '../../shared/principal.js';
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
  /**
   * Called once a revocation is stored, with the client's id and the grants it ended; resolves
   * once everything of the client has ended (sessions, jobs, channels, computers).
   */
  onRevoked(clientId: string, grantIds: readonly string[]): Promise<void>;
}

function when(ms: number | null): string {
  return ms === null ? 'never' : new Date(ms).toISOString().replace('T', ' ').slice(0, 19);
}

function hidden(nonce: string, grant: OAuthGrant): string {
  return `<input type="hidden" name="nonce" value="${escapeHtml(nonce)}"><input type="hidden" name="grant" value="${escapeHtml(grant.id)}">`;
}

function row(g: OAuthGrant, nonce: () => string): string {
  const computers = computersOfScopes(g.scopes);
  const toolsets = g.scopes.filter((s) => !s.startsWith(COMPUTER_SCOPE_PREFIX));
  const granted = computers
    .map(
      (c) =>
        `<li data-computer="${escapeHtml(c)}"><code>${escapeHtml(c)}</code> <form method="post" action="${CLIENTS_PATH}" style="display:inline">${hidden(nonce(), g)}<input type="hidden" name="computer" value="${escapeHtml(c)}"><button type="submit" name="action" value="withdraw">Withdraw</button></form></li>`,
    )
    .join('');
  return `<tr data-client="${escapeHtml(g.client.id)}"><td>${escapeHtml(g.client.name)}<br><code>${escapeHtml(g.client.id)}</code></td>
<td>${toolsets.map((s) => `<code>${escapeHtml(s)}</code>`).join(' ')}</td>
<td><ul class="computers">${granted || '<li class="note">its own only</li>'}</ul>
<form method="post" action="${CLIENTS_PATH}">${hidden(nonce(), g)}<input name="computer" placeholder="named computer" aria-label="Named computer to grant" size="14"><button type="submit" name="action" value="grant">Grant</button></form></td>
<td>${when(g.grantedAt)}</td><td>${when(g.lastUsedAt)}</td>
<td><form method="post" action="${CLIENTS_PATH}"><input type="hidden" name="nonce" value="${escapeHtml(nonce())}">
<input type="hidden" name="action" value="revoke"><button type="submit" name="client" value="${escapeHtml(g.client.id)}">Revoke</button></form></td></tr>`;
}

/** The clients page and its actions (needs a dock session: not public). */
export function clientsRoute(options: ClientsPageOptions): WebRoute {
  const handleOf = (req: IncomingMessage) => {
    const cookie = readCookie(req.headers.cookie, SESSION_COOKIE);
    return cookie ? options.sessions.sessionHandle(cookie) : 'token';
  };
  const show = async (req: IncomingMessage, res: ServerResponse, status: number, note: string | null) => {
    const grants = await options.store.liveGrants();
    const handle = handleOf(req);
    const nonce = () => options.nonces.issue(NONCE_KEY, handle);
    const rows = grants.map((g) => row(g, nonce)).join('');
    sendPage(
      res,
      status,
      'Clients',
      `<h1>MCP clients signed in with OAuth</h1>
${note ? `<p class="note" role="status">${escapeHtml(note)}</p>` : ''}
${
  grants.length === 0
    ? '<p id="no-clients">No client holds a grant. Clients that sign in appear here after you approve them.</p>'
    : `<table id="clients"><thead><tr><th>Client</th><th>Scopes</th><th>Your computers it may use</th><th>Approved</th><th>Last used</th><th></th></tr></thead><tbody>${rows}</tbody></table>`
}
<p class="note">A client always has computers of its own; it reaches one of your named computers only when you grant it here or on its consent page. Revoking ends its sessions, cancels its running jobs and refuses their tool calls at once; it must ask again to come back. From a shell: <code>paddock clients list</code>, <code>paddock clients revoke ID</code>.</p>
<p><a href="/">Back to the dock</a></p>`,
    );
  };

  /** Opens (`grant`) or closes (`withdraw`) a named computer to the grant's client. */
  const changeComputer = async (form: URLSearchParams, open: boolean): Promise<string> => {
    const grant = await options.store.grant(form.get('grant') ?? '');
    if (!grant || grant.revokedAt !== null)
      return 'That client holds no live grant any more; nothing changed.';
    const name = (form.get('computer') ?? '').trim();
    const problem = computerNameProblem(name);
    if (problem) return `${problem} Nothing changed.`;
    const scope = `${COMPUTER_SCOPE_PREFIX}${name}`;
    const others = grant.scopes.filter((s) => s !== scope);
    const changed = await options.store.setScopes(grant.id, open ? [...others, scope] : others);
    if (!changed) return 'That client holds no live grant any more; nothing changed.';
    options.logger.info(open ? 'oauth.computer_granted' : 'oauth.computer_withdrawn', {
      client: grant.client.id,
      grant: grant.id,
      computer: name,
      by: 'dock',
    });
    return open
      ? `${grant.client.name} may now use your computer ${name} (from its next request).`
      : `${grant.client.name} may no longer use your computer ${name} (from its next request).`;
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
          'That request came from an old or foreign page; nothing changed. Try again here.',
        );
      }
      const action = form.get('action') ?? 'revoke';
      if (action === 'grant' || action === 'withdraw') {
        return show(req, res, 200, await changeComputer(form, action === 'grant'));
      }
      const id = form.get('client') ?? '';
      const ended = await options.store.revokeClient(id);
      const first = ended[0] === undefined ? null : await options.store.grant(ended[0]);
      if (first) await options.onRevoked(first.client.id, ended);
      options.logger.info('oauth.client_revoked', { client: id, grants: ended.length, by: 'dock' });
      await show(
        req,
        res,
        200,
        ended.length
          ? `Revoked ${id}; its sessions ended, and its running jobs and its computers with them.`
          : `${id} held no live grant.`,
      );
    },
  };
}
