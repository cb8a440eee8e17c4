/**
 * HTTP plumbing of the preview relay: requests from the dock's origin go to a server inside
 * the computer over a GuestSocket, and its answers come back with the server's credentials
 * kept apart from the dock's:
 *
 * - the dock's own cookies (`paddock*`) and the server's bearer token never reach the guest;
 * - a guest cannot set or overwrite a `paddock*` cookie, and its cookies are scoped to the
 *   preview's base path;
 * - every response carries `Content-Security-Policy: sandbox …`, so a page from the computer
 *   runs in an opaque origin even when opened outside the dock's iframe: its scripts can never
 *   act as the dock.
 */
import { type IncomingHttpHeaders, type IncomingMessage, request, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';

/** The sandbox every preview response gets (the dock's iframe uses the same flags). */
export const PREVIEW_SANDBOX_CSP = [
  // an opaque origin: the page can never act as the dock, and it opens no other window
  'sandbox allow-scripts allow-forms allow-modals allow-downloads',
  // the computer has no network; its pages must not get one through the person's browser either
  "default-src 'self' data: blob:",
  "script-src 'self' 'unsafe-inline' 'unsafe-eval' data: blob:",
  "style-src 'self' 'unsafe-inline' data:",
  "connect-src 'self'",
  "form-action 'self'",
  "base-uri 'self'",
].join('; ');

/** Headers that belong to one connection, never forwarded. */
const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'proxy-authenticate',
  'proxy-authorization',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
]);

/** How one proxied request is shaped. */
export interface ProxyTarget {
  /** Guest path with query, e.g. `/app/?x=1`. */
  path: string;
  /** Port inside the computer. */
  port: number;
  /** Where the preview is mounted on this server (`/preview`, or `` on a preview origin). */
  basePath: string;
  /** The server's token: an `Authorization: Bearer <token>` carrying it is not forwarded. */
  serverToken?: string;
  /** Adds the sandbox CSP to every response (default true). */
  sandbox: boolean;
}

/** Cookies of the dock itself: never shown to nor settable by the guest. */
function isDockCookie(name: string): boolean {
  return name.trim().toLowerCase().startsWith('paddock');
}

/** Request headers for the guest's server. */
export function guestRequestHeaders(headers: IncomingHttpHeaders, t: ProxyTarget): Record<string, string> {
  const connectionListed = new Set(
    String(headers.connection ?? '')
      .split(',')
      .map((s) => s.trim().toLowerCase())
      .filter(Boolean),
  );
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined || HOP_BY_HOP.has(name) || connectionListed.has(name)) continue;
    if (name === 'host' || name.startsWith('x-forwarded-')) continue;
    if (name === 'cookie') {
      const kept = String(value)
        .split(';')
        .filter((c) => c.trim() !== '' && !isDockCookie(c.split('=')[0] ?? ''))
        .map((c) => c.trim());
      if (kept.length > 0) out.cookie = kept.join('; ');
      continue;
    }
    // the server token never reaches the guest, however a header spells it
    if (t.serverToken && String(value).includes(t.serverToken)) continue;
    out[name] = Array.isArray(value) ? value.join(', ') : value;
  }
  out.host = `localhost:${t.port}`;
  if (headers.host) out['x-forwarded-host'] = String(headers.host);
  out['x-forwarded-proto'] = 'http';
  if (t.basePath) out['x-forwarded-prefix'] = t.basePath;
  return out;
}

/** A Location the browser should follow under the preview's base path. */
export function rewriteLocation(location: string, t: ProxyTarget): string {
  if (location.startsWith('/') && !location.startsWith('//')) return `${t.basePath}${location}`;
  try {
    const u = new URL(location);
    const local = ['localhost', '127.0.0.1', '[::1]'].includes(u.hostname);
    const port = u.port === '' ? (u.protocol === 'https:' ? 443 : 80) : Number(u.port);
    if (local && port === t.port && (u.protocol === 'http:' || u.protocol === 'https:'))
      return `${t.basePath}${u.pathname}${u.search}${u.hash}`;
  } catch {
    // A relative reference: the browser resolves it against the preview URL already.
  }
  return location;
}

/** A Location that stays on this host (a path or a relative reference), else null (dropped). */
function insidePreview(location: string): string | null {
  return /^[a-z][a-z0-9+.-]*:|^[\\/][\\/]/i.test(location.trim()) ? null : location;
}

/** A Set-Cookie scoped to the preview (null: dropped, it would touch the dock's cookies). */
export function rewriteSetCookie(value: string, t: ProxyTarget): string | null {
  const [pair = '', ...attrs] = value.split(';');
  if (isDockCookie(pair.split('=')[0] ?? '')) return null;
  const kept: string[] = [pair.trim()];
  for (const attr of attrs) {
    const [rawKey = '', ...rest] = attr.split('=');
    const key = rawKey.trim().toLowerCase();
    if (key === 'domain') continue;
    if (key === 'path' && t.basePath) {
      const path = rest.join('=').trim();
      kept.push(`Path=${t.basePath}${path.startsWith('/') ? path : `/${path}`}`);
      continue;
    }
    if (attr.trim()) kept.push(attr.trim());
  }
  return kept.join('; ');
}

/** The guest's response headers as a flat [name, value, …] list for writeHead. */
export function clientResponseHeaders(rawHeaders: string[], t: ProxyTarget): string[] {
  const out: string[] = [];
  for (let i = 0; i + 1 < rawHeaders.length; i += 2) {
    const name = rawHeaders[i]!;
    let value: string | null = rawHeaders[i + 1]!;
    const lower = name.toLowerCase();
    if (HOP_BY_HOP.has(lower)) continue;
    // a redirect leaves the preview for no other host, framed or not
    if (lower === 'location') value = insidePreview(rewriteLocation(value, t));
    else if (lower === 'set-cookie') value = rewriteSetCookie(value, t);
    if (value !== null) out.push(name, value);
  }
  if (t.sandbox) out.push('Content-Security-Policy', PREVIEW_SANDBOX_CSP);
  return out;
}

/** Sends a short HTML page (the relay's own answers: nothing listening, no computer…). */
export function sendPreviewPage(res: ServerResponse, status: number, title: string, text: string): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  const body = `<!doctype html><html><head><meta charset="utf-8"><title>${escapeHtml(title)}</title><style>body{font:15px/1.5 system-ui,sans-serif;margin:2rem;color:#1b2330}code{background:#eef1f4;padding:.1em .3em;border-radius:3px}</style></head><body><h1 style="font-size:1.2rem">${escapeHtml(title)}</h1><p>${escapeHtml(text).replace(/`([^`]+)`/g, '<code>$1</code>')}</p></body></html>`;
  res.writeHead(status, {
    'content-type': 'text/html; charset=utf-8',
    'content-length': Buffer.byteLength(body),
    'cache-control': 'no-store',
    'content-security-policy': "default-src 'none'; style-src 'unsafe-inline'; sandbox",
    'x-paddock-preview': status === 502 ? 'unreachable' : 'unavailable',
  });
  res.end(body);
}

/** Forwards one HTTP request to the guest's server over `socket` and streams the answer back. */
export function proxyHttp(socket: Duplex, req: IncomingMessage, res: ServerResponse, t: ProxyTarget): void {
  const upstream = request({
    method: req.method ?? 'GET',
    path: t.path,
    headers: guestRequestHeaders(req.headers, t),
    createConnection: () => socket as unknown as Socket,
  });
  upstream.on('response', (answer) => {
    const refuse = (why: string) => {
      answer.destroy();
      socket.destroy();
      sendPreviewPage(
        res,
        502,
        'The preview server sent an invalid answer',
        `${why} Fix the server, then reload.`,
      );
    };
    const status = answer.statusCode ?? 0;
    // a guest server chooses its status line: one Node cannot send (0–99, 600+) must not throw here
    if (status < 100 || status > 599) {
      refuse(
        `The server on port ${t.port} in the computer answered with HTTP status ${status}, which is not a valid status code.`,
      );
      return;
    }
    try {
      res.writeHead(status, answer.statusMessage, clientResponseHeaders(answer.rawHeaders, t));
    } catch {
      refuse(
        `The server on port ${t.port} in the computer sent a status line or headers that cannot be relayed.`,
      );
      return;
    }
    answer.pipe(res);
    answer.on('error', () => res.destroy());
  });
  upstream.on('error', () => {
    socket.destroy();
    sendPreviewPage(
      res,
      502,
      'The preview server gave no answer',
      `The server on port ${t.port} in the computer closed the connection without a complete answer. Check its output, then reload.`,
    );
  });
  res.on('close', () => {
    if (!res.writableFinished) upstream.destroy();
  });
  req.pipe(upstream);
}

/** The request head of an upgrade (WebSocket) as the guest's server should see it. */
export function upgradeHead(req: IncomingMessage, t: ProxyTarget): Buffer {
  const lines = [`${req.method ?? 'GET'} ${t.path} HTTP/1.1`];
  const headers = guestRequestHeaders(req.headers, t);
  for (const [name, value] of Object.entries(headers))
    lines.push(`${name}: ${value.replace(/[\r\n]/g, ' ')}`);
  lines.push(
    'connection: Upgrade',
    `upgrade: ${String(req.headers.upgrade ?? 'websocket').replace(/[\r\n]/g, ' ')}`,
  );
  return Buffer.from(`${lines.join('\r\n')}\r\n\r\n`, 'latin1');
}

/** Answers a refused upgrade with a plain HTTP response and closes the socket. */
export function refuseUpgrade(socket: Duplex, status: number, message: string): void {
  if (socket.destroyed) return;
  const body = Buffer.from(message);
  socket.end(
    `HTTP/1.1 ${status} ${status === 502 ? 'Bad Gateway' : 'Service Unavailable'}\r\ncontent-type: text/plain; charset=utf-8\r\ncontent-length: ${body.length}\r\nconnection: close\r\n\r\n${message}`,
  );
}

function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}
