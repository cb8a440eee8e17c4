import {
  createServer,
  type IncomingMessage,
  type Server,
  type ServerResponse,
  STATUS_CODES,
} from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import type { McpGrant } from '../mcp/grant.js';
import type { McpHttpEndpoint } from '../mcp/http.js';
import { sendJsonRpcError } from '../mcp/http.js';
import type { Logger } from '../shared/logger.js';
import { bearerToken, hostnameOf, readCookie, tokenMatches } from './auth.js';

export const SESSION_COOKIE = 'paddock_session';

/**
 * A route of the web app: gets the request when `match` says yes. Auth already checked. `/mcp`
 * (with or without a query) belongs to the MCP endpoint and never reaches a route.
 */
export interface WebRoute {
  match(req: IncomingMessage, url: URL): boolean;
  handle(req: IncomingMessage, res: ServerResponse, url: URL): Promise<void> | void;
  /** Routes that must work without the token (the login link itself). */
  public?: boolean;
  /**
   * The path itself is the credential (an unguessable capability, e.g. the preview's): no
   * session needed, and `Origin: null` (a sandboxed frame) is accepted.
   */
  capability?: boolean;
  /**
   * Any Origin may call it (Host is still checked): endpoints that use no ambient credential,
   * such as OAuth metadata, registration and token requests from browser-based clients.
   */
  crossOrigin?: boolean;
}

/**
 * A websocket (or other HTTP upgrade) endpoint. The app checks Host, Origin and the token
 * before `handle` runs; an upgrade no route matches is answered 404 and closed.
 */
export interface WebUpgradeRoute {
  match(req: IncomingMessage, url: URL): boolean;
  handle(req: IncomingMessage, socket: Duplex, head: Buffer, url: URL): void;
  /** Refuse upgrades that carry no Origin header (endpoints meant for the dock page only). */
  requireOrigin?: boolean;
  /** The path itself is the credential (an unguessable capability): no session needed. */
  capability?: boolean;
}

/** Validates the value of the session cookie (the dock's in-memory login sessions). */
export interface SessionValidator {
  valid(secret: string): boolean;
}

export interface WebAppOptions {
  host: string;
  port: number;
  auth: 'token' | 'none';
  token: string;
  /** Host names accepted in the Host header besides loopback names. */
  allowedHosts: readonly string[];
  mcp: McpHttpEndpoint;
  logger: Logger;
  /** Extra routes (dock, launch links). */
  routes?: WebRoute[];
  /** Websocket endpoints (the dock's live channel, preview relays). */
  upgrades?: WebUpgradeRoute[];
  /**
   * Login sessions: a session cookie this accepts authenticates every path except `/mcp`
   * (MCP clients always send the bearer token).
   */
  sessions?: SessionValidator;
  /**
   * OAuth sign-in of MCP clients: admits `/mcp` requests that carry an access token it
   * issued, and names the resource metadata in every 401 from `/mcp`.
   */
  oauth?: {
    verify(
      token: string,
      req: IncomingMessage,
    ): Promise<{ ok: true; grant: McpGrant } | { ok: false; description: string }>;
    challenge(req: IncomingMessage, error?: { code: string; description: string }): string;
  };
  /** Answers an unauthenticated request outside `/mcp` (the dock's sign-in page). */
  unauthorized?: (req: IncomingMessage, res: ServerResponse, url: URL) => void;
}

const LOOPBACK_NAMES = ['localhost', '127.0.0.1', '[::1]'];

/**
 * The HTTP server of `paddock serve`: `/mcp` (Streamable HTTP), the dock and its
 * login. Every request passes Host validation (DNS rebinding), Origin validation (no
 * other origin is served) and, unless auth is `none`, the token (bearer header or the
 * dock's session cookie).
 */
export class WebApp {
  readonly server: Server;
  /** Sockets handed to an upgrade route (websockets), ended with the server. */
  private readonly upgraded = new Set<Duplex>();
  private readonly allowedHosts: Set<string>;

  constructor(private readonly options: WebAppOptions) {
    this.allowedHosts = new Set([...LOOPBACK_NAMES, ...options.allowedHosts.map((h) => h.toLowerCase())]);
    if (!LOOPBACK_NAMES.includes(options.host) && options.host !== '0.0.0.0' && options.host !== '::') {
      this.allowedHosts.add(options.host.toLowerCase());
    }
    this.server = createServer((req, res) => {
      this.route(req, res).catch((e: unknown) => {
        options.logger.error('web.failed', { url: req.url, error: (e as Error).message });
        if (!res.headersSent) {
          res.writeHead(500, { 'content-type': 'text/plain' });
          res.end('Internal error; check the server logs.');
        } else res.destroy();
      });
    });
    this.server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
      // an upgraded socket leaves the server's HTTP bookkeeping but still holds close() open
      this.upgraded.add(socket);
      socket.once('close', () => this.upgraded.delete(socket));
      try {
        this.upgrade(req, socket, head);
      } catch (e) {
        options.logger.error('web.upgrade_failed', { url: req.url, error: (e as Error).message });
        rejectUpgrade(socket, 500, 'Internal error; check the server logs.');
      }
    });
  }

  /** Listens on the configured port, or on `port` when given (0: any free one). */
  async listen(port = this.options.port): Promise<AddressInfo> {
    await new Promise<void>((resolve, reject) => {
      this.server.once('error', reject);
      // A burst of clients (each MCP request may open its own connection) waits in the kernel's
      // queue while the event loop is busy; Node's default of 511 drops the rest of a burst's
      // connects, and a client then times out connecting. The kernel caps it at somaxconn.
      this.server.listen({ port, host: this.options.host, backlog: 4096 }, () => {
        this.server.off('error', reject);
        resolve();
      });
    });
    return this.server.address() as AddressInfo;
  }

  /**
   * Host and Origin checks shared by HTTP requests and websocket upgrades. `opaqueOk` accepts
   * `Origin: null` (what a sandboxed preview frame sends) for capability routes only.
   */
  checkOrigin(
    req: IncomingMessage,
    opaqueOk = false,
    anyOrigin = false,
  ): { ok: true } | { ok: false; status: number; message: string } {
    const host = req.headers.host;
    if (!host || !this.allowedHosts.has(hostnameOf(host))) {
      return {
        ok: false,
        status: 403,
        message: `Host "${host ?? ''}" is not allowed; add it to server.allowedHosts if this is intended.`,
      };
    }
    const origin = req.headers.origin;
    if (origin !== undefined && !anyOrigin && !(opaqueOk && origin === 'null')) {
      let originHost: string;
      try {
        const u = new URL(origin);
        originHost = u.host;
      } catch {
        return { ok: false, status: 403, message: 'Malformed Origin header.' };
      }
      if (originHost.toLowerCase() !== host.toLowerCase()) {
        return {
          ok: false,
          status: 403,
          message: `Origin "${origin}" is not this server; requests from other sites are refused.`,
        };
      }
    }
    return { ok: true };
  }

  /**
   * Whether the request carries the token as a bearer header or, outside `/mcp`, a login
   * session's cookie (the token itself never lives in a browser).
   */
  authenticated(req: IncomingMessage, url?: URL): boolean {
    if (this.options.auth === 'none') return true;
    if (tokenMatches(bearerToken(req.headers.authorization), this.options.token)) return true;
    const cookie = readCookie(req.headers.cookie, SESSION_COOKIE);
    const path = url?.pathname ?? new URL(req.url ?? '/', 'http://localhost').pathname;
    return cookie !== undefined && path !== '/mcp' && this.options.sessions?.valid(cookie) === true;
  }

  private upgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void {
    const url = new URL(req.url ?? '/', 'http://localhost');
    const route = this.options.upgrades?.find((r) => r.match(req, url));
    if (!route) {
      rejectUpgrade(socket, 404, 'No websocket endpoint at this path.');
      return;
    }
    const refusal = this.upgradeRefusal(req, url, route);
    if (refusal) {
      rejectUpgrade(socket, ...refusal);
      return;
    }
    route.handle(req, socket, head, url);
  }

  /** Why an upgrade to `route` is refused (status and message), or null when it may proceed. */
  private upgradeRefusal(
    req: IncomingMessage,
    url: URL,
    route: WebUpgradeRoute,
  ): readonly [number, string] | null {
    const check = this.checkOrigin(req, route.capability === true);
    if (!check.ok) return [check.status, check.message];
    if (route.requireOrigin && req.headers.origin === undefined) {
      return [403, 'Missing Origin header; this endpoint only serves the dock page.'];
    }
    if (!route.capability && !this.authenticated(req, url)) {
      return [401, 'Sign in with the login link that `paddock serve` printed, then reload the dock.'];
    }
    return null;
  }

  private async route(req: IncomingMessage, res: ServerResponse): Promise<void> {
    // The MCP endpoint's own path skips the route table (no route serves /mcp): Host, Origin and
    // the token are checked as for every request, without building a URL per call.
    if (isMcpPath(req.url)) {
      const check = this.checkOrigin(req);
      if (!check.ok) return sendJsonRpcError(res, check.status, -32000, check.message);
      return this.routeMcp(req, res);
    }
    const url = new URL(req.url ?? '/', 'http://localhost');
    const route = this.options.routes?.find((r) => r.match(req, url));
    const check = this.checkOrigin(req, route?.capability === true, route?.crossOrigin === true);
    if (!check.ok) {
      if (url.pathname === '/mcp') return sendJsonRpcError(res, check.status, -32000, check.message);
      res.writeHead(check.status, { 'content-type': 'text/plain' });
      res.end(check.message);
      return;
    }
    if (url.pathname === '/healthz') {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{"ok":true}');
      return;
    }
    if (route?.public || route?.capability) return route.handle(req, res, url);
    if (url.pathname === '/mcp') return this.routeMcp(req, res);
    if (!this.authenticated(req, url)) {
      if (this.options.unauthorized) return this.options.unauthorized(req, res, url);
      res.writeHead(401, { 'content-type': 'text/plain; charset=utf-8' });
      res.end(
        'Sign in with the login link that `paddock serve` printed; restart it for a new one, or POST /login/link with the server token.',
      );
      return;
    }
    if (route) return route.handle(req, res, url);
    res.writeHead(404, { 'content-type': 'text/plain' });
    res.end('Not found.');
  }

  /** `/mcp`: the server token, or an access token of an OAuth grant; else a 401 that says how. */
  private async routeMcp(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const token = bearerToken(req.headers.authorization);
    if (this.options.auth === 'none' || tokenMatches(token, this.options.token)) {
      return this.options.mcp.handle(req, res);
    }
    const oauth = this.options.oauth;
    let refusal: string | undefined;
    if (token !== undefined && oauth) {
      const check = await oauth.verify(token, req);
      if (check.ok) return this.options.mcp.handle(req, res, check.grant);
      refusal = check.description;
    }
    res.setHeader(
      'www-authenticate',
      oauth
        ? oauth.challenge(
            req,
            refusal === undefined ? undefined : { code: 'invalid_token', description: refusal },
          )
        : 'Bearer realm="paddock"',
    );
    return sendJsonRpcError(res, 401, -32000, tokenRefusal(token, refusal, oauth !== undefined));
  }

  /** Stops listening and ends every connection, websockets (dock pages, previews) included. */
  async close(): Promise<void> {
    await this.options.mcp.close();
    await new Promise<void>((resolve) => {
      this.server.close(() => resolve());
      this.server.closeAllConnections();
      for (const socket of this.upgraded) socket.destroy();
    });
  }
}

/** Whether a request target is exactly `/mcp`, with or without a query. */
function isMcpPath(target: string | undefined): boolean {
  return target === '/mcp' || target?.startsWith('/mcp?') === true;
}

/** Answers a refused upgrade with a plain HTTP response and closes the socket. */
function rejectUpgrade(socket: Duplex, status: number, message: string): void {
  if (socket.destroyed) return;
  const body = Buffer.from(message);
  socket.end(
    `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? 'Error'}\r\n` +
      'Content-Type: text/plain; charset=utf-8\r\n' +
      `Content-Length: ${body.length}\r\nConnection: close\r\n\r\n${message}`,
  );
}

/** Where a client finds the server token (never its path: the caller is not signed in). */
const TOKEN_WHERE =
  'The server token is the file "token" in the data directory of `paddock serve` (`paddock status` prints that directory); `paddock mcp` connects without one.';

/** Why /mcp refused: no token at all, or one that is neither the server's nor a live OAuth token. */
function tokenRefusal(token: string | undefined, oauthRefusal: string | undefined, oauth: boolean): string {
  if (token === undefined) {
    return `No bearer token: send "Authorization: Bearer <token>"${oauth ? ', or sign in with OAuth' : ''}. ${TOKEN_WHERE}`;
  }
  const why = oauthRefusal ? ` (as an OAuth access token: ${oauthRefusal})` : '';
  return `The bearer token is wrong: it is not this server's token${why}. ${TOKEN_WHERE}`;
}
