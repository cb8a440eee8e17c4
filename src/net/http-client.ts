import { validateHeaderName, validateHeaderValue } from 'node:http';
import { isIP } from 'node:net';
import { rootCertificates } from 'node:tls';
import type { HostResolver } from '../policy/types.js';
import { raceAbort } from '../shared/abort.js';
import { isPaddockError, PaddockError } from '../shared/errors.js';
import { decodeBody, readCapped } from './body.js';
import { bareHostname, effectivePort, selectHeaders, send } from './http-transport.js';
import {
  DEFAULT_HTTP_LIMITS,
  type HttpCallContext,
  type HttpClient,
  type HttpClientOptions,
  type HttpLimits,
  type HttpRedirect,
  type HttpRequest,
  type HttpResponse,
} from './http-types.js';
import { upstreamError } from './net-errors.js';
import { PinningResolver } from './pinned-dns.js';
import { followRedirect, type HopRequest, REDIRECT_STATUSES } from './redirects.js';

/** The client's types live in http-types.ts; they are re-exported here for callers. */
export type * from './http-types.js';
export { DEFAULT_HTTP_LIMITS } from './http-types.js';

/** Request headers a caller may not set: the client owns framing, connection and the target host. */
const RESERVED_HEADERS = new Set([
  'host',
  'content-length',
  'transfer-encoding',
  'connection',
  'keep-alive',
  'upgrade',
  'te',
  'trailer',
  'expect',
  'proxy-connection',
]);

/**
 * Builds the HTTP client used by http_get, http_post and notify. Each hop is checked with
 * `policy.enforce({ type: 'http', method, url }, { dns })` and then connected to exactly the
 * addresses that check saw (so DNS rebinding between check and connect cannot redirect it);
 * redirects are re-checked as new actions; bodies are read as streams under a byte cap.
 */
export function createHttpClient(options: HttpClientOptions): HttpClient {
  const limits: HttpLimits = { ...DEFAULT_HTTP_LIMITS };
  for (const key of Object.keys(DEFAULT_HTTP_LIMITS) as (keyof HttpLimits)[]) {
    const value = options[key];
    if (value === undefined) continue;
    if (!Number.isSafeInteger(value) || value < 0 || (key !== 'maxRedirects' && value < 1)) {
      throw new PaddockError(
        'INVALID_ARGUMENT',
        `HTTP client limit ${key} must be a positive integer; fix the configuration.`,
      );
    }
    limits[key] = value;
  }
  if (limits.defaultMaxBytes > limits.maxBytesLimit || limits.defaultTimeoutMs > limits.maxTimeoutMs) {
    throw new PaddockError(
      'INVALID_ARGUMENT',
      'HTTP client defaults must not exceed their limits (defaultMaxBytes ≤ maxBytesLimit, defaultTimeoutMs ≤ maxTimeoutMs); fix the configuration.',
    );
  }
  const ca = options.extraCaCerts?.length ? [...rootCertificates, ...options.extraCaCerts] : undefined;
  return new PolicyHttpClient(options.dns, limits, options.userAgent ?? 'Paddock/0.1', ca);
}

class PolicyHttpClient implements HttpClient {
  constructor(
    private readonly dns: HostResolver,
    readonly limits: HttpLimits,
    private readonly userAgent: string,
    private readonly ca: string[] | undefined,
  ) {}

  async request(request: HttpRequest, ctx: HttpCallContext): Promise<HttpResponse> {
    const first = this.prepare(request);
    const maxBytes = request.maxBytes ?? this.limits.defaultMaxBytes;
    if (!Number.isSafeInteger(maxBytes) || maxBytes < 1 || maxBytes > this.limits.maxBytesLimit) {
      throw new PaddockError(
        'INVALID_ARGUMENT',
        `maxBytes must be between 1 and ${this.limits.maxBytesLimit}; pick a value in that range.`,
      );
    }
    const timeoutMs = request.timeoutMs ?? this.limits.defaultTimeoutMs;
    if (!Number.isSafeInteger(timeoutMs) || timeoutMs < 1 || timeoutMs > this.limits.maxTimeoutMs) {
      throw new PaddockError(
        'INVALID_ARGUMENT',
        `timeoutMs must be between 1 and ${this.limits.maxTimeoutMs}; pick a value in that range.`,
      );
    }
    const remainingMs = ctx.deadline === undefined ? Number.POSITIVE_INFINITY : ctx.deadline - Date.now();
    const budgetMs = Math.min(timeoutMs, remainingMs);
    const origin = first.url.origin;
    if (budgetMs <= 0) {
      throw new PaddockError(
        'TIMEOUT',
        `The call's deadline passed before ${origin} could be contacted; retry with a longer deadline.`,
      );
    }

    const abort = new AbortController();
    const timer = setTimeout(() => {
      const byDeadline = remainingMs < timeoutMs;
      abort.abort(
        new PaddockError(
          'TIMEOUT',
          byDeadline
            ? `${origin} did not answer completely before the call's deadline (${Math.round(budgetMs)} ms); retry with a longer deadline.`
            : `${origin} did not answer completely within ${timeoutMs} ms; retry with a larger timeoutMs (at most ${this.limits.maxTimeoutMs}) or request less data.`,
          { url: first.url.href, timeoutMs: Math.round(budgetMs) },
        ),
      );
    }, budgetMs);
    const onCallerAbort = () => {
      const reason: unknown = ctx.signal?.reason;
      abort.abort(
        isPaddockError(reason)
          ? reason
          : new PaddockError(
              'TIMEOUT',
              `The request to ${origin} was cancelled by the caller before it completed.`,
            ),
      );
    };
    if (ctx.signal?.aborted) onCallerAbort();
    else ctx.signal?.addEventListener('abort', onCallerAbort, { once: true });

    let hop = first;
    try {
      return await this.exchange(first, maxBytes, ctx, abort.signal, (current) => {
        hop = current;
      });
    } catch (e) {
      if (abort.signal.aborted) throw abort.signal.reason;
      throw upstreamError(e, `${hop.url.hostname}:${effectivePort(hop.url)}`, hop.url.href);
    } finally {
      clearTimeout(timer);
      ctx.signal?.removeEventListener('abort', onCallerAbort);
    }
  }

  /** Validates the request and builds its first hop. Throws before any network activity. */
  private prepare(request: HttpRequest): HopRequest {
    let url: URL;
    try {
      url = new URL(request.url);
    } catch {
      throw new PaddockError(
        'INVALID_ARGUMENT',
        `"${request.url}" is not a valid URL; give an absolute http:// or https:// URL.`,
      );
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') {
      throw new PaddockError(
        'INVALID_ARGUMENT',
        `Only http:// and https:// URLs are supported, not ${url.protocol}//; change the URL.`,
      );
    }
    const method = (request.method ?? 'GET').toUpperCase();
    if (!/^[A-Z]{1,16}$/.test(method)) {
      throw new PaddockError(
        'INVALID_ARGUMENT',
        `"${method}" is not an HTTP method; use GET, POST, PUT, PATCH, DELETE or HEAD.`,
      );
    }
    const headers: Record<string, string> = {
      'user-agent': this.userAgent,
      accept: '*/*',
      'accept-encoding': 'identity',
    };
    for (const [rawName, value] of Object.entries(request.headers ?? {})) {
      const name = rawName.toLowerCase();
      if (RESERVED_HEADERS.has(name)) {
        throw new PaddockError(
          'INVALID_ARGUMENT',
          `The ${rawName} header is set by Paddock itself; remove it from headers.`,
        );
      }
      try {
        validateHeaderName(name);
        validateHeaderValue(name, value);
      } catch {
        throw new PaddockError(
          'INVALID_ARGUMENT',
          `Header "${rawName}" has an invalid name or value (control characters or line breaks?); fix it and retry.`,
        );
      }
      headers[name] = value;
    }
    const hop: HopRequest = { method, url, headers };
    if (request.body !== undefined) {
      const body =
        typeof request.body === 'string' ? Buffer.from(request.body, 'utf8') : Buffer.from(request.body);
      if (body.length > this.limits.maxRequestBytes) {
        throw new PaddockError(
          'LIMIT_EXCEEDED',
          `The request body is ${body.length} bytes, more than the limit of ${this.limits.maxRequestBytes}; send less data.`,
          { bytes: body.length, maxBytes: this.limits.maxRequestBytes },
        );
      }
      hop.body = body;
    }
    return hop;
  }

  private async exchange(
    first: HopRequest,
    maxBytes: number,
    ctx: HttpCallContext,
    signal: AbortSignal,
    onHop: (hop: HopRequest) => void,
  ): Promise<HttpResponse> {
    const redirects: HttpRedirect[] = [];
    let hop = first;
    for (;;) {
      onHop(hop);
      const addresses = await this.authorize(hop, ctx, signal);
      const res = await send(hop, addresses, signal, this.ca);
      const status = res.statusCode ?? 0;
      const location = res.headers.location;
      if (REDIRECT_STATUSES.has(status) && location) {
        res.destroy();
        if (redirects.length >= this.limits.maxRedirects) {
          throw new PaddockError(
            'LIMIT_EXCEEDED',
            `${first.url.href} redirected more than ${this.limits.maxRedirects} times; request the final URL directly or check for a redirect loop.`,
            { redirects },
          );
        }
        let target: URL;
        try {
          target = new URL(location, hop.url);
        } catch {
          throw new PaddockError(
            'UPSTREAM_ERROR',
            `${hop.url.href} redirected to an invalid URL (${location}); report it to the site.`,
          );
        }
        redirects.push({ status, url: hop.url.href, location: target.href });
        hop = followRedirect(hop, status, target);
        continue;
      }
      const declared = Number(res.headers['content-length']);
      const read = await readCapped(res, maxBytes, Number.isFinite(declared) ? declared : undefined);
      if (read.truncated) res.destroy();
      const decoded = decodeBody(read.buffer, res.headers['content-type'], read.truncated);
      return {
        status,
        statusText: res.statusMessage ?? '',
        url: hop.url.href,
        headers: selectHeaders(res),
        redirects,
        ...decoded,
        truncated: read.truncated,
      };
    }
  }

  /** Checks one hop with the policy and returns the addresses the check approved. */
  private async authorize(hop: HopRequest, ctx: HttpCallContext, signal: AbortSignal): Promise<string[]> {
    const url = hop.url.href;
    const pinning = new PinningResolver(this.dns);
    let rule: string;
    let vetted: string[] | undefined;
    try {
      const decision = await raceAbort(
        ctx.policy.enforce({ type: 'http', method: hop.method, url }, { dns: pinning }),
        signal,
      );
      rule = decision.rule;
      vetted = decision.addresses;
      if (!decision.allow) {
        throw new PaddockError(
          'POLICY_DENIED',
          `${url} is not allowed (${decision.rule}): ${decision.reason}. Ask an operator to add the host to policy.http.allow.`,
          {
            rule: decision.rule,
          },
        );
      }
    } catch (e) {
      if (isPaddockError(e) && e.code === 'POLICY_DENIED') {
        ctx.onPolicyDecision?.({ url, rule: String(e.details.rule ?? 'unknown'), allow: false });
      }
      throw e;
    }
    ctx.onPolicyDecision?.({ url, rule, allow: true });
    if (hop.url.protocol !== 'http:' && hop.url.protocol !== 'https:') {
      throw new PaddockError(
        'UPSTREAM_ERROR',
        `The server redirected to ${url}, which is not an http(s) URL; Paddock does not follow it.`,
      );
    }
    const host = bareHostname(hop.url);
    if (isIP(host)) return [host];
    // the policy's own answer (the static host map, or what it resolved) is the one to pin
    if (vetted && vetted.length > 0) return vetted;
    const addresses = (await raceAbort(pinning.lookup(host), signal)).filter((a) => isIP(a) !== 0);
    if (addresses.length === 0) {
      throw new PaddockError(
        'UPSTREAM_ERROR',
        `The host name ${host} has no address; check the spelling of the URL.`,
        { url },
      );
    }
    return addresses;
  }
}
