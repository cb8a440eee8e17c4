import http, { type IncomingMessage } from 'node:http';
import https from 'node:https';
import { pinnedLookup } from './pinned-dns.js';
import type { HopRequest } from './redirects.js';

/** Response headers passed on to the caller (never `set-cookie`). */
const SELECTED_HEADERS = [
  'content-type',
  'content-length',
  'content-encoding',
  'content-language',
  'content-disposition',
  'location',
  'last-modified',
  'etag',
  'cache-control',
  'expires',
  'date',
  'retry-after',
  'www-authenticate',
  'link',
  'x-request-id',
  'ratelimit-limit',
  'ratelimit-remaining',
  'ratelimit-reset',
  'x-ratelimit-limit',
  'x-ratelimit-remaining',
  'x-ratelimit-reset',
];

/**
 * Sends one hop to the pinned addresses and resolves with the response head. The URL's
 * host name still names the server for the Host header, TLS SNI and certificate checks.
 */
export function send(
  hop: HopRequest,
  addresses: string[],
  signal: AbortSignal,
  ca?: string[],
): Promise<IncomingMessage> {
  return new Promise<IncomingMessage>((resolve, reject) => {
    const transport = hop.url.protocol === 'https:' ? https : http;
    const req = transport.request({
      protocol: hop.url.protocol,
      hostname: bareHostname(hop.url),
      port: effectivePort(hop.url),
      path: `${hop.url.pathname}${hop.url.search}`,
      method: hop.method,
      headers: hop.body ? { ...hop.headers, 'content-length': String(hop.body.length) } : hop.headers,
      agent: false,
      lookup: pinnedLookup(addresses),
      signal,
      ...(ca && hop.url.protocol === 'https:' ? { ca } : {}),
    });
    req.once('response', resolve);
    req.on('error', reject);
    req.end(hop.body);
  });
}

/** The URL's host without IPv6 brackets, as node:net expects it. */
export function bareHostname(url: URL): string {
  return url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
}

/** The URL's port, or its scheme's default. */
export function effectivePort(url: URL): number {
  if (url.port) return Number(url.port);
  return url.protocol === 'https:' ? 443 : 80;
}

/** The response headers worth passing on (see SELECTED_HEADERS). */
export function selectHeaders(res: IncomingMessage): Record<string, string> {
  const selected: Record<string, string> = {};
  for (const name of SELECTED_HEADERS) {
    const value = res.headers[name];
    if (typeof value === 'string') selected[name] = value;
  }
  return selected;
}
