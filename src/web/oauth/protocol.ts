/**
 * The fixed parts of Paddock's OAuth 2.1 authorization server: scopes, metadata documents
 * (RFC 8414, RFC 9728), and the small HTTP helpers its endpoints share.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { readSmallBody } from '../dock/launch-page.js';

/** The scopes a client can ask for, and the tool sets each one opens. */
export const SCOPE_TOOLSETS = {
  tools: 'builtin',
  computer: 'computer',
  integrations: 'integrations',
} as const;

export type Scope = keyof typeof SCOPE_TOOLSETS;
export const SCOPES = Object.keys(SCOPE_TOOLSETS) as Scope[];

/** What a scope lets a client do, as the consent page says it. */
export const SCOPE_TEXT: Record<Scope, string> = {
  tools: 'use the built-in tools: files, shell, HTTP within the domain policy, memory, notifications',
  computer: 'use the computer: launch it, run commands, terminals, files, preview',
  integrations: 'use the tools of the upstream MCP servers and plugins configured here',
};

/** Tool sets a grant with these scopes may see. */
export function toolsetsOf(scopes: readonly string[]): string[] {
  return scopes.filter((s): s is Scope => s in SCOPE_TOOLSETS).map((s) => SCOPE_TOOLSETS[s]);
}

/** Paths of the endpoints. */
export const OAUTH_PATHS = {
  resourceMetadata: '/.well-known/oauth-protected-resource',
  serverMetadata: '/.well-known/oauth-authorization-server',
  authorize: '/oauth/authorize',
  token: '/oauth/token',
  register: '/oauth/register',
  revoke: '/oauth/revoke',
} as const;

/** The issuer: the public URL when configured, else the origin the request reached. */
export function issuerOf(req: IncomingMessage, publicUrl: string | undefined): string {
  if (publicUrl) return publicUrl.replace(/\/+$/, '');
  return `http://${req.headers.host ?? '127.0.0.1'}`;
}

/** The protected resource (the MCP endpoint) for an issuer. */
export function resourceOf(issuer: string): string {
  return `${issuer}/mcp`;
}

/** RFC 9728 metadata of the MCP endpoint. */
export function resourceMetadata(issuer: string): Record<string, unknown> {
  return {
    resource: resourceOf(issuer),
    authorization_servers: [issuer],
    scopes_supported: SCOPES,
    bearer_methods_supported: ['header'],
    resource_name: 'Paddock',
  };
}

/** RFC 8414 metadata of the authorization server. */
export function serverMetadata(issuer: string): Record<string, unknown> {
  return {
    issuer,
    authorization_endpoint: `${issuer}${OAUTH_PATHS.authorize}`,
    token_endpoint: `${issuer}${OAUTH_PATHS.token}`,
    registration_endpoint: `${issuer}${OAUTH_PATHS.register}`,
    revocation_endpoint: `${issuer}${OAUTH_PATHS.revoke}`,
    scopes_supported: SCOPES,
    response_types_supported: ['code'],
    response_modes_supported: ['query'],
    grant_types_supported: ['authorization_code', 'refresh_token'],
    code_challenge_methods_supported: ['S256'],
    token_endpoint_auth_methods_supported: ['none'],
    revocation_endpoint_auth_methods_supported: ['none'],
    client_id_metadata_document_supported: true,
    authorization_response_iss_parameter_supported: true,
  };
}

/** The WWW-Authenticate value of a 401 from the MCP endpoint. */
export function challenge(issuer: string, error?: { code: string; description: string }): string {
  const parts = [`Bearer resource_metadata="${issuer}${OAUTH_PATHS.resourceMetadata}"`];
  parts.push(`scope="${SCOPES.join(' ')}"`);
  if (error) {
    parts.push(`error="${error.code}"`);
    parts.push(`error_description="${error.description.replace(/["\\]/g, "'")}"`);
  }
  return parts.join(', ');
}

/** Sends a JSON body that must not be cached (every OAuth answer). */
export function sendJson(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  res.writeHead(status, {
    'content-type': 'application/json',
    'cache-control': 'no-store',
    pragma: 'no-cache',
    ...headers,
  });
  res.end(JSON.stringify(body));
}

/** An OAuth error answer (RFC 6749 §5.2 shape). */
export function sendOAuthError(
  res: ServerResponse,
  status: number,
  error: string,
  description: string,
): void {
  sendJson(res, status, { error, error_description: description });
}

/** Reads a JSON body of at most `maxBytes`; undefined when too large or not JSON. */
export async function readJsonBody(req: IncomingMessage, maxBytes: number): Promise<unknown> {
  const body = await readSmallBody(req, maxBytes);
  if (body === null) return undefined;
  try {
    return JSON.parse(body.toString('utf8'));
  } catch {
    return undefined;
  }
}

/**
 * Whether a redirect URI may be registered: https, or http on a loopback host (native apps,
 * RFC 8252), or a private-use scheme such as `com.example.app:/cb`. No fragment.
 */
export function acceptableRedirectUri(uri: string): boolean {
  let url: URL;
  try {
    url = new URL(uri);
  } catch {
    return false;
  }
  if (url.hash || uri.length > 2048) return false;
  if (url.protocol === 'https:') return true;
  if (url.protocol === 'http:') return ['localhost', '127.0.0.1', '[::1]'].includes(url.hostname);
  return /^[a-z][a-z0-9+.-]*\.[a-z0-9+.-]+:$/.test(url.protocol);
}
