/**
 * Schema fragments that several config files share, so that a URL or a header means the same
 * everywhere (paddock.yaml's agent providers and notify channels, tool input schemas).
 */
import { z } from 'zod';

/** An HTTP header name (an RFC 9110 token). */
export const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

/** {@link HEADER_NAME} as a JSON Schema `pattern`, for tool input schemas. */
export const HEADER_NAME_PATTERN = HEADER_NAME.source;

/** Longest URL in a config file, in characters. */
export const MAX_CONFIG_URL_LENGTH = 2048;

/** What a URL of a config file is refused for, or null when it is fine. */
function urlProblem(value: string): string | null {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return 'must be an absolute http:// or https:// URL';
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    return 'must be an absolute http:// or https:// URL';
  if (url.username || url.password) {
    return 'must not contain a user name or password; put credentials in a header (e.g. Authorization) instead';
  }
  return null;
}

/**
 * An absolute http:// or https:// URL without userinfo: credentials in a URL end up in logs and
 * are refused by the HTTP policy anyway, so a config that holds them fails at load.
 */
export const httpUrl = z
  .string()
  .max(MAX_CONFIG_URL_LENGTH)
  .superRefine((value, ctx) => {
    const problem = urlProblem(value);
    if (problem) ctx.addIssue({ code: 'custom', message: problem });
  });

/** A header name. */
export const headerName = z.string().regex(HEADER_NAME, 'must be an HTTP header name');

/** A header value: one line, no NUL. */
export const headerValue = z
  .string()
  .max(8192)
  .regex(/^[^\r\n\0]*$/, 'must not contain line breaks or NUL');

/** Extra request headers by name. */
export const headerRecord = z.record(headerName, headerValue);
