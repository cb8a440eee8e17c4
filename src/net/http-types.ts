import type { HostResolver, Sandbox } from '../policy/types.js';
import type { BodyEncoding } from './body.js';

/** Limits of an HTTP client; every field has a default (see `createHttpClient`). */
export interface HttpLimits {
  /** Response bytes kept when a request names no `maxBytes` (default 1 MiB). */
  defaultMaxBytes: number;
  /** Largest `maxBytes` a request may ask for (default 10 MiB). */
  maxBytesLimit: number;
  /** Time for the whole exchange when a request names no `timeoutMs` (default 30 s). */
  defaultTimeoutMs: number;
  /** Largest `timeoutMs` a request may ask for (default 120 s). */
  maxTimeoutMs: number;
  /** Redirects followed before the request fails (default 5). */
  maxRedirects: number;
  /** Largest request body (default 1 MiB). */
  maxRequestBytes: number;
}

/** What an HTTP client is built from: a resolver, optional limits and TLS trust. */
export interface HttpClientOptions extends Partial<HttpLimits> {
  /** Resolves host names; the policy checks its answers and the client connects to them. */
  dns: HostResolver;
  userAgent?: string;
  /**
   * Extra PEM certificates trusted for https (an internal CA), in addition to the
   * runtime's public roots.
   */
  extraCaCerts?: string[];
}

/** One request. Header names are case-insensitive. */
export interface HttpRequest {
  /** Default `GET`. */
  method?: string;
  url: string;
  headers?: Record<string, string>;
  body?: string | Uint8Array;
  timeoutMs?: number;
  maxBytes?: number;
}

/** A policy decision taken for one hop (the first request or a redirect). */
export interface HopDecision {
  url: string;
  rule: string;
  allow: boolean;
}

/** Who asks and under which bounds. */
export interface HttpCallContext {
  /** Checks every hop before anything is sent to it. */
  policy: Sandbox;
  signal?: AbortSignal;
  /** Absolute deadline, epoch milliseconds; the exchange never runs past it. */
  deadline?: number;
  /** Sees each hop's decision, denials included (for the audit row). */
  onPolicyDecision?: (decision: HopDecision) => void;
}

/** A redirect that was followed. */
export interface HttpRedirect {
  status: number;
  /** The URL that answered with the redirect. */
  url: string;
  /** The absolute URL it pointed to. */
  location: string;
}

/** The final response. A non-2xx status is a response like any other, not an error. */
export interface HttpResponse {
  status: number;
  statusText: string;
  /** The final URL, after redirects. */
  url: string;
  /** A selection of response headers, lower-cased (no `set-cookie`). */
  headers: Record<string, string>;
  redirects: HttpRedirect[];
  body: string;
  encoding: BodyEncoding;
  /** The server sent more than `maxBytes`; `body` holds the first `maxBytes`. */
  truncated: boolean;
  /** Body bytes carried in `body` (before base64). */
  bytes: number;
}

/** An HTTP client whose every hop passes the policy. */
export interface HttpClient {
  readonly limits: HttpLimits;
  request(request: HttpRequest, ctx: HttpCallContext): Promise<HttpResponse>;
}

const MIB = 1024 * 1024;

/** The limits used where none are given. */
export const DEFAULT_HTTP_LIMITS: HttpLimits = {
  defaultMaxBytes: MIB,
  maxBytesLimit: 10 * MIB,
  defaultTimeoutMs: 30_000,
  maxTimeoutMs: 120_000,
  maxRedirects: 5,
  maxRequestBytes: MIB,
};
