/** The policy-checked HTTP client and the notifier built on it. */

export { trimIncompleteUtf8 } from '../shared/text.js';
export {
  type BodyEncoding,
  type CappedRead,
  type DecodedBody,
  decodeBody,
  isTextualMediaType,
  parseContentType,
  readCapped,
} from './body.js';
export {
  createHttpClient,
  DEFAULT_HTTP_LIMITS,
  type HopDecision,
  type HttpCallContext,
  type HttpClient,
  type HttpClientOptions,
  type HttpLimits,
  type HttpRedirect,
  type HttpRequest,
  type HttpResponse,
} from './http-client.js';
export { upstreamError } from './net-errors.js';
export {
  createNotifier,
  MAX_NOTIFY_DATA_BYTES,
  MAX_NOTIFY_MESSAGE_BYTES,
  type Notifier,
  type NotifierOptions,
  type NotifyContext,
  type NotifyPayload,
  type NotifyReceipt,
} from './notifier.js';
export { normalizeHostname, PinningResolver, pinnedLookup } from './pinned-dns.js';
export {
  CREDENTIAL_HEADERS,
  followRedirect,
  type HopRequest,
  isCrossOrigin,
  REDIRECT_STATUSES,
} from './redirects.js';
