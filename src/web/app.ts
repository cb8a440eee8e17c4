import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { McpHttpEndpoint } from '../mcp/http.js';
import { sendJsonRpcError } from '../mcp/http.js';
import type { Logger } from '../shared/logger.js';
import { hostnameOf, readCookie, tokenMatches } from './auth.js';

export const SESSION_COOKIE = 'paddock_session';

/** A route of the web app: gets the request when `match` says yes. Auth already checked. */
export interface WebRoute {
  match(req: IncomingMessage, url: URL): boolean;
  handle(req: IncomingMessage, res: ServerResponse, url: URL): Promise<void> | void;
  /** Routes that must work without the token (the login link itself). */
  public?: boolean;
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
  /** Extra routes (dock, launch links, websockets register their own upgrade handlers). */
  routes?: WebRoute[];
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
  }

  async listen(): Promise<AddressInfo> {
    await new Promise<void>((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(this.options.port, this.options.host, () => {
        this.server.off('error', reject);
        resolve();
      });
    });
    return this.server.address() as AddressInfo;
  }

  /** Host and Origin checks shared by HTTP requests and websocket upgrades. */
  checkOrigin(req: IncomingMessage): { ok: true } | { ok: false; status: number; message: string } {
    const host = req.headers.host;
    if (!host || !this.allowedHosts.has(hostnameOf(host))) {
      return {
        ok: false,
        status: 403,
        message: `Host "${host ?? ''}" is not allowed; add it to server.allowedHosts if this is intended.`,
      };
    }
    const origin = req.headers.origin;
    if (origin !== undefined) {
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

  /** Whether the request carries the token (bearer header or session cookie). */
  authenticated(req: IncomingMessage): boolean {
    if (this.options.auth === 'none') return true;
    const auth = req.headers.authorization;
    if (auth?.startsWith('Bearer ') && tokenMatches(auth.slice(7).trim(), this.options.token)) return true;
    return tokenMatches(readCookie(req.headers.cookie, SESSION_COOKIE), this.options.token);
  }

  private async route(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://localhost');
    const check = this.checkOrigin(req);
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
    const route = this.options.routes?.find((r) => r.match(req, url));
    if (route?.public) return route.handle(req, res, url);
    if (!this.authenticated(req)) {
      if (url.pathname === '/mcp') {
        res.setHeader('www-authenticate', 'Bearer realm="paddock"');
        return sendJsonRpcError(
          res,
          401,
          -32000,
          'Missing or wrong bearer token: send "Authorization: Bearer <token>" (the token is in the data directory).',
        );
      }
      res.writeHead(401, { 'content-type': 'text/plain; charset=utf-8' });
      res.end('Sign in with the login link that `paddock serve` printed (or run `paddock login-link`).');
      return;
    }
    if (url.pathname === '/mcp') return this.options.mcp.handle(req, res);
    if (route) return route.handle(req, res, url);
    res.writeHead(404, { 'content-type': 'text/plain' });
    res.end('Not found.');
  }

  async close(): Promise<void> {
    await this.options.mcp.close();
    await new Promise<void>((resolve) => {
      this.server.close(() => resolve());
      this.server.closeAllConnections();
    });
  }
}
