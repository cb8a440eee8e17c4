import { PaddockError } from '../shared/errors.js';

const TLS_CODE =
  /^(ERR_TLS_|ERR_SSL_|CERT_|UNABLE_TO_|DEPTH_ZERO_SELF_SIGNED_CERT|SELF_SIGNED_CERT_IN_CHAIN|HOSTNAME_MISMATCH)/;

/**
 * Translates a failure of the network exchange (refused, reset, TLS, malformed reply…)
 * into an UPSTREAM_ERROR whose message says what happened and what to try next.
 * `target` is `host:port` of the hop that failed.
 */
export function upstreamError(error: unknown, target: string, url: string): PaddockError {
  if (error instanceof PaddockError) return error;
  const cause = error as NodeJS.ErrnoException | undefined;
  const code = typeof cause?.code === 'string' ? cause.code : undefined;
  const details = { url, ...(code ? { cause: code } : {}) };
  const say = (message: string) => new PaddockError('UPSTREAM_ERROR', message, details);
  switch (code) {
    case 'ECONNREFUSED':
      return say(`${target} refused the connection; check that the server is running and the port is right.`);
    case 'ECONNRESET':
    case 'EPIPE':
      return say(`${target} closed the connection before answering completely; retry later.`);
    case 'ETIMEDOUT':
    case 'EHOSTUNREACH':
    case 'ENETUNREACH':
    case 'EADDRNOTAVAIL':
      return say(`${target} cannot be reached from this server (${code}); check the address or retry later.`);
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
    case 'ENODATA':
      return say(
        `The host name of ${target} could not be resolved (${code}); check the spelling of the URL.`,
      );
    default:
      break;
  }
  if (code && TLS_CODE.test(code)) {
    return say(
      `The TLS handshake with ${target} failed (${code}): its certificate is not trusted for this name; use a host with a valid certificate.`,
    );
  }
  if (code?.startsWith('HPE_')) {
    return say(
      `${target} sent a malformed HTTP response (${code}); the server may not speak HTTP on this port.`,
    );
  }
  const text = cause instanceof Error ? cause.message : String(error);
  return say(`The request to ${target} failed: ${text}. Check the URL and retry.`);
}
