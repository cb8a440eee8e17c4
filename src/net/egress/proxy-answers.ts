/**
 * What the egress proxy itself says over HTTP: the credentials it reads from a request and the
 * plain answers it writes (refusals, errors), shared by the proxy and its HTTP side.
 */

/** Proxy credentials from a `Proxy-Authorization: Basic …` header value. */
export function parseBasicCredentials(header: string | undefined): { user: string; password: string } | null {
  if (!header) return null;
  const m = /^Basic\s+([A-Za-z0-9+/=]+)\s*$/i.exec(header);
  if (!m) return null;
  const text = Buffer.from(m[1]!, 'base64').toString('utf8');
  const colon = text.indexOf(':');
  if (colon < 0) return null;
  return {
    user: decodeURIComponent(text.slice(0, colon)),
    password: decodeURIComponent(text.slice(colon + 1)),
  };
}

/** A complete HTTP/1.1 response with a text body, closing the connection. */
export function plainResponse(status: number, text: string, extra: Record<string, string> = {}): string {
  const reason = STATUS_TEXT[status] ?? 'Error';
  const body = `${text}\n`;
  const headers = {
    'content-type': 'text/plain; charset=utf-8',
    'content-length': String(Buffer.byteLength(body)),
    connection: 'close',
    ...extra,
  };
  const lines = Object.entries(headers).map(([k, v]) => `${k}: ${v}`);
  return `HTTP/1.1 ${status} ${reason}\r\n${lines.join('\r\n')}\r\n\r\n${body}`;
}

const STATUS_TEXT: Record<number, string> = {
  400: 'Bad Request',
  403: 'Forbidden',
  407: 'Proxy Authentication Required',
  421: 'Misdirected Request',
  502: 'Bad Gateway',
  503: 'Service Unavailable',
  504: 'Gateway Timeout',
};
