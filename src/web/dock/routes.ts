/**
 * HTTP routes of the dock: sign-in (`/login`), a fresh login link for token holders
 * (`POST /login/link`), the page and its assets, and launch-link confirmation.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { PaddockError } from '../../shared/errors.js';
import type { Logger } from '../../shared/logger.js';
import { SESSION_COOKIE, type WebRoute } from '../app.js';
import { readCookie } from '../auth.js';
import { escapeHtml, sendPage, sendText, wantsHtml } from './html.js';
import type { DockHub } from './hub.js';
import {
  LAUNCH_PATH,
  type LaunchNonces,
  readForm,
  renderLaunchPage,
  sameOriginPost,
  sendLaunchError,
} from './launch-page.js';
import type { DockLogin } from './login.js';
import type { DockComputer } from './sources.js';
import type { UiAssets } from './static-assets.js';

/** What the routes work with. */
export interface DockRouteDeps {
  auth: 'token' | 'none';
  login: DockLogin;
  hub: DockHub;
  computer: DockComputer | null;
  assets: UiAssets;
  nonces: LaunchNonces;
  logger: Logger;
  /** Adds `Secure` to the session cookie (the public URL is https). */
  secureCookie: boolean;
  /** A new login link for the request's base URL. */
  loginLink(base: string): { url: string; expiresAt: number };
}

/** Base URL of a request as the browser sees it (Host already validated by the app). */
function baseOf(req: IncomingMessage): string {
  return `http://${req.headers.host ?? '127.0.0.1'}`;
}

/** The sign-in help answered to requests without a session or token. */
export function sendSignIn(req: IncomingMessage, res: ServerResponse, note?: string): void {
  if (!wantsHtml(req.headers.accept)) {
    sendText(
      res,
      401,
      `${note ? `${note} ` : ''}Sign in with a login link: run \`paddock open\` on the server's machine (or use the one \`paddock serve\` printed), or send "Authorization: Bearer <token>".`,
    );
    return;
  }
  const base = escapeHtml(baseOf(req));
  sendPage(
    res,
    401,
    'Sign in',
    `<h1>Sign in to the dock</h1>
${note ? `<p class="err">${escapeHtml(note)}</p>` : ''}
<p>Run <code>paddock open</code> on the machine where Paddock runs: it asks the running server for a fresh login link (it looks like <code>${base}/login?code=…</code>) and opens it in your browser. Each link works once and for ten minutes; <code>paddock serve</code> also prints one when it starts.</p>
<p class="note">From another machine, ask the running server with its token:<br>
<code>curl -X POST -H "Authorization: Bearer $(cat &lt;data dir&gt;/token)" ${base}/login/link</code></p>`,
  );
}

function sessionHandle(req: IncomingMessage, login: DockLogin): string {
  const cookie = readCookie(req.headers.cookie, SESSION_COOKIE);
  return cookie ? login.sessionHandle(cookie) : 'token';
}

/** The dock's routes, in match order. */
export function dockRoutes(deps: DockRouteDeps): WebRoute[] {
  const { login, assets } = deps;
  return [
    {
      public: true,
      match: (req, url) => url.pathname === '/login' && (req.method === 'GET' || req.method === 'HEAD'),
      handle: (req, res, url) => {
        if (deps.auth === 'none') {
          res.writeHead(303, { location: '/' });
          res.end();
          return;
        }
        const code = url.searchParams.get('code');
        const secret = code ? login.redeem(code) : null;
        if (!secret) {
          const note = code
            ? 'This login link is invalid, expired or was already used.'
            : 'The login link is missing its code.';
          return sendSignIn(req, res, note);
        }
        const cookie = `${SESSION_COOKIE}=${secret}; HttpOnly; SameSite=Strict; Path=/${deps.secureCookie ? '; Secure' : ''}`;
        deps.logger.info('dock.login', {});
        sendPage(
          res,
          200,
          'Signed in',
          '<h1>Signed in</h1><p>Opening the dock… <a href="/" id="continue">Continue</a></p>',
          { 'set-cookie': cookie },
          '<meta http-equiv="refresh" content="0;url=/">',
        );
      },
    },
    {
      match: (req, url) => url.pathname === '/login/link' && req.method === 'POST',
      handle: (req, res) => {
        const link = deps.loginLink(baseOf(req));
        res.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'no-store' });
        res.end(JSON.stringify({ url: link.url, expiresAt: new Date(link.expiresAt).toISOString() }));
      },
    },
    {
      match: (req, url) => (url.pathname === '/' || url.pathname === '/index.html') && req.method === 'GET',
      handle: (_req, res) => assets.sendIndex(res),
    },
    {
      match: (req, url) => req.method === 'GET' && assets.matches(url.pathname),
      handle: (_req, res, url) => assets.sendAsset(res, url.pathname),
    },
    {
      match: (_req, url) => LAUNCH_PATH.test(url.pathname),
      handle: (req, res, url) => launchRoute(deps, req, res, url),
    },
  ];
}

async function launchRoute(
  deps: DockRouteDeps,
  req: IncomingMessage,
  res: ServerResponse,
  url: URL,
): Promise<void> {
  const id = LAUNCH_PATH.exec(url.pathname)![1]!;
  const computer = deps.computer;
  if (!computer) {
    return sendLaunchError(
      res,
      new PaddockError(
        'UNSUPPORTED_CAPABILITY',
        'This server runs without the computer service, so launch links cannot boot here.',
      ),
    );
  }
  if (req.method === 'GET' || req.method === 'HEAD') {
    return showLaunch(deps, computer, req, res, id, null, 200);
  }
  if (req.method !== 'POST') {
    res.writeHead(405, { allow: 'GET, POST', 'content-type': 'text/plain' });
    res.end('Use GET to review a launch link and POST (its Confirm button) to boot it.');
    return;
  }
  if (!sameOriginPost(req)) {
    return sendPage(
      res,
      403,
      'Launch link',
      '<h1>Refused</h1><p class="err">Confirmations must come from this server\'s own launch page. Open the link again and press Confirm.</p>',
    );
  }
  const form = await readForm(req);
  const nonce = form?.get('nonce') ?? '';
  if (!nonce || !deps.nonces.consume(nonce, id, sessionHandle(req, deps.login))) {
    return showLaunch(
      deps,
      computer,
      req,
      res,
      id,
      'This confirmation expired or was already used. Review the script below and confirm again.',
      403,
    );
  }
  try {
    await deps.hub.confirmLaunch(id);
  } catch (e) {
    const message = e instanceof PaddockError ? e.message : 'The launch failed; check the server logs.';
    return showLaunch(deps, computer, req, res, id, message, 409);
  }
  deps.logger.info('dock.launch_link_confirmed', { linkId: id });
  res.writeHead(303, { location: `/?launch=${encodeURIComponent(id)}`, 'cache-control': 'no-store' });
  res.end();
}

async function showLaunch(
  deps: DockRouteDeps,
  computer: DockComputer,
  req: IncomingMessage,
  res: ServerResponse,
  id: string,
  error: string | null,
  status: number,
): Promise<void> {
  let link: Awaited<ReturnType<DockComputer['launchLink']>>;
  try {
    link = await computer.launchLink(id);
  } catch (e) {
    sendLaunchError(res, e);
    return;
  }
  const nonce = deps.nonces.issue(id, sessionHandle(req, deps.login));
  const hosted = computer.hostedByPage?.(link.profile.id) === true;
  sendPage(res, status, 'Launch link', renderLaunchPage(link, computer.status(), nonce, error, hosted));
}
