/** Statuses whose `Location` is followed. 300, 304, 305 and 306 are returned as they are. */
export const REDIRECT_STATUSES: ReadonlySet<number> = new Set([301, 302, 303, 307, 308]);

/** Request headers that carry credentials and never travel to another origin. */
export const CREDENTIAL_HEADERS: readonly string[] = ['authorization', 'cookie', 'proxy-authorization'];

/** Headers that describe a request body; dropped when a redirect turns the request into a GET. */
const BODY_HEADERS: readonly string[] = [
  'content-type',
  'content-length',
  'content-encoding',
  'content-language',
];

/** One request as it goes out on a hop. */
export interface HopRequest {
  method: string;
  url: URL;
  /** Lower-cased header names. */
  headers: Record<string, string>;
  body?: Buffer;
}

/** Whether two URLs differ in scheme, host or port (what decides if credentials may follow). */
export function isCrossOrigin(a: URL, b: URL): boolean {
  return a.protocol !== b.protocol || a.hostname !== b.hostname || effectivePort(a) !== effectivePort(b);
}

function effectivePort(url: URL): string {
  if (url.port) return url.port;
  return url.protocol === 'https:' ? '443' : '80';
}

/**
 * The request that follows a redirect, per RFC 9110 and the Fetch standard: 303 turns any
 * method but HEAD into a body-less GET, 301 and 302 do so for POST, 307 and 308 keep the
 * method and the body. Credential headers are dropped when the target's origin differs.
 */
export function followRedirect(previous: HopRequest, status: number, target: URL): HopRequest {
  const headers = { ...previous.headers };
  let { method, body } = previous;
  const toGet =
    (status === 303 && method !== 'HEAD') || ((status === 301 || status === 302) && method === 'POST');
  if (toGet) {
    method = 'GET';
    body = undefined;
    for (const name of BODY_HEADERS) delete headers[name];
  }
  if (isCrossOrigin(previous.url, target)) {
    for (const name of CREDENTIAL_HEADERS) delete headers[name];
  }
  const next: HopRequest = { method, url: target, headers };
  if (body !== undefined) next.body = body;
  return next;
}
