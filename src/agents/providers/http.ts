import { PaddockError } from '../../shared/errors.js';

/** Largest provider response read, in bytes. */
export const MAX_PROVIDER_RESPONSE_BYTES = 16 * 1024 * 1024;
/** First retry delay; later ones double, with jitter, up to MAX_BACKOFF_MS. */
export const BASE_BACKOFF_MS = 500;
export const MAX_BACKOFF_MS = 20_000;
/** Longest `retry-after` honoured. */
export const MAX_RETRY_AFTER_MS = 60_000;

const RETRYABLE = new Set([408, 409, 425, 429, 500, 502, 503, 504, 529]);

/** One JSON POST to a provider, with its bounds. */
export interface ProviderPost {
  provider: string;
  url: string;
  headers: Record<string, string>;
  body: unknown;
  /** Bound of one attempt. */
  timeoutMs: number;
  maxRetries: number;
  /** The run's signal: its abort reason is rethrown as is (wall time, cancellation). */
  signal: AbortSignal;
  /** How to fix a rejected key, e.g. "check ANTHROPIC_API_KEY". */
  keyHint: string;
  /** Called before each retry (for logs). */
  onRetry?: (info: { attempt: number; status?: number; delayMs: number; reason: string }) => void;
}

/** What every HTTP provider is configured with (its wire format adds its own fields). */
export interface ProviderEndpoint {
  name: string;
  model: string;
  /** Endpoint root; each format appends its path. */
  baseUrl: string;
  apiKey?: string;
  headers: Record<string, string>;
  timeoutMs: number;
  maxRetries: number;
  keyHint: string;
  onRetry?: ProviderPost['onRetry'];
}

/** POSTs one request of a provider to `path` under its base URL, with the format's auth headers. */
export function postToProvider(
  endpoint: ProviderEndpoint,
  path: string,
  authHeaders: Record<string, string>,
  body: unknown,
  signal: AbortSignal,
): Promise<unknown> {
  return postJson({
    provider: endpoint.name,
    url: `${endpoint.baseUrl.replace(/\/+$/, '')}${path}`,
    headers: { ...endpoint.headers, ...authHeaders },
    body,
    timeoutMs: endpoint.timeoutMs,
    maxRetries: endpoint.maxRetries,
    signal,
    keyHint: endpoint.keyHint,
    ...(endpoint.onRetry ? { onRetry: endpoint.onRetry } : {}),
  });
}

/**
 * POSTs JSON and returns the parsed JSON answer. Retries HTTP 408/409/425/429/5xx/529 and
 * dropped connections up to `maxRetries` times with exponential backoff and jitter (a
 * `retry-after` header wins, up to 60 s); never retries 401/403 (a clear key error) or other
 * 4xx (the provider's message is passed on). An attempt that outlives `timeoutMs` is a TIMEOUT
 * (not retried: a hanging model would hang again and cost more). The run's signal ends
 * everything at once, including a backoff sleep.
 */
export async function postJson(post: ProviderPost): Promise<unknown> {
  let lastError: PaddockError | undefined;
  for (let attempt = 0; attempt <= post.maxRetries; attempt++) {
    if (post.signal.aborted) throw post.signal.reason;
    const timeout = AbortSignal.timeout(post.timeoutMs);
    const signal = AbortSignal.any([post.signal, timeout]);
    let response: Response;
    try {
      response = await fetch(post.url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json', ...post.headers },
        body: JSON.stringify(post.body),
        signal,
        redirect: 'error',
      });
    } catch (e) {
      if (post.signal.aborted) throw post.signal.reason;
      if (timeout.aborted) throw timeoutError(post);
      lastError = new PaddockError(
        'UPSTREAM_ERROR',
        `Provider "${post.provider}" could not be reached at ${origin(post.url)} (${causeOf(e)}). Check its baseUrl and that the server is up.`,
      );
      await backoff(post, attempt, undefined, lastError.message);
      continue;
    }
    let text: string;
    try {
      text = await readCapped(response, MAX_PROVIDER_RESPONSE_BYTES);
    } catch (e) {
      if (post.signal.aborted) throw post.signal.reason;
      if (timeout.aborted) throw timeoutError(post);
      throw e instanceof PaddockError
        ? e
        : new PaddockError(
            'UPSTREAM_ERROR',
            `Provider "${post.provider}" dropped the answer (${causeOf(e)}); retry the run.`,
          );
    }
    if (response.ok) {
      try {
        return JSON.parse(text) as unknown;
      } catch {
        throw new PaddockError(
          'UPSTREAM_ERROR',
          `Provider "${post.provider}" answered with something that is not JSON; check that its baseUrl points at the API (not a web page).`,
          { reason: 'malformed_response' },
        );
      }
    }
    const detail = providerMessage(text);
    if (response.status === 401 || response.status === 403) {
      throw new PaddockError(
        'UPSTREAM_ERROR',
        `Provider "${post.provider}" rejected the API key (HTTP ${response.status}${detail ? `: ${detail}` : ''}); ${post.keyHint}.`,
        { status: response.status },
      );
    }
    lastError = new PaddockError(
      'UPSTREAM_ERROR',
      `Provider "${post.provider}" answered HTTP ${response.status}${detail ? `: ${detail}` : ''}.` +
        (RETRYABLE.has(response.status)
          ? ` Paddock retried ${attempt} time(s); try again later or raise agents.providers.${post.provider}.maxRetries.`
          : ' Check the model name and the request limits of this provider.'),
      { status: response.status },
    );
    if (!RETRYABLE.has(response.status)) throw lastError;
    await backoff(
      post,
      attempt,
      retryAfterMs(response.headers.get('retry-after')),
      `HTTP ${response.status}`,
      response.status,
    );
  }
  throw lastError ?? new PaddockError('UPSTREAM_ERROR', `Provider "${post.provider}" failed; retry the run.`);
}

/** Sleeps before the next attempt, or throws when there is none or the run ends first. */
async function backoff(
  post: ProviderPost,
  attempt: number,
  retryAfter: number | undefined,
  reason: string,
  status?: number,
): Promise<void> {
  if (attempt >= post.maxRetries) return;
  const exp = Math.min(MAX_BACKOFF_MS, BASE_BACKOFF_MS * 2 ** attempt);
  const delayMs = retryAfter ?? Math.round(exp / 2 + Math.random() * (exp / 2));
  post.onRetry?.({ attempt: attempt + 1, delayMs, reason, ...(status ? { status } : {}) });
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => {
      post.signal.removeEventListener('abort', onAbort);
      resolve();
    }, delayMs);
    const onAbort = () => {
      clearTimeout(timer);
      reject(post.signal.reason);
    };
    if (post.signal.aborted) onAbort();
    else post.signal.addEventListener('abort', onAbort, { once: true });
  });
}

function timeoutError(post: ProviderPost): PaddockError {
  return new PaddockError(
    'TIMEOUT',
    `Provider "${post.provider}" did not answer within ${post.timeoutMs} ms. Retry the run, or raise agents.providers.${post.provider}.timeoutMs for slow models.`,
  );
}

/** `retry-after` in seconds or as an HTTP date, capped; undefined when absent or odd. */
export function retryAfterMs(header: string | null, now = Date.now()): number | undefined {
  if (!header) return undefined;
  const seconds = Number(header);
  const ms = Number.isFinite(seconds) ? seconds * 1000 : Date.parse(header) - now;
  if (!Number.isFinite(ms) || ms < 0) return undefined;
  return Math.min(MAX_RETRY_AFTER_MS, Math.round(ms));
}

/** The provider's own error message from a JSON error body, else the start of the text. */
function providerMessage(text: string): string {
  try {
    const body = JSON.parse(text) as { error?: { message?: unknown } | string; message?: unknown };
    const message = typeof body.error === 'string' ? body.error : (body.error?.message ?? body.message);
    if (typeof message === 'string') return message.slice(0, 300);
  } catch {
    // not JSON
  }
  return text.replace(/\s+/g, ' ').trim().slice(0, 200);
}

async function readCapped(response: Response, maxBytes: number): Promise<string> {
  if (!response.body) return '';
  const reader = response.body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.byteLength;
    if (total > maxBytes) {
      await reader.cancel().catch(() => {});
      throw new PaddockError(
        'UPSTREAM_ERROR',
        `The provider's answer is larger than ${maxBytes} bytes; Paddock does not read it.`,
      );
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks).toString('utf8');
}

function origin(url: string): string {
  try {
    return new URL(url).origin;
  } catch {
    return url;
  }
}

function causeOf(e: unknown): string {
  const cause = (e as { cause?: { code?: string; message?: string } })?.cause;
  return cause?.code ?? cause?.message ?? (e as Error)?.message ?? String(e);
}
