/**
 * The two grants of the token endpoint, as checks that return the grant to issue tokens for
 * or the refusal the specification names: an authorization code (single use, PKCE S256,
 * same client and redirect URI) and a refresh token (rotated: each works once, and a
 * rotated-out one coming back ends the whole grant).
 */
import type { OAuthGrant, OAuthStore } from '../../store/oauth.js';

/** A refusal of the token endpoint (RFC 6749 §5.2 error code). */
export interface Refusal {
  error: 'invalid_request' | 'invalid_grant' | 'invalid_scope' | 'invalid_target';
  description: string;
  fields?: Record<string, unknown>;
}

const VERIFIER = /^[A-Za-z0-9._~-]{43,128}$/;

function fieldsOf(grant: OAuthGrant): Record<string, unknown> {
  return { client: grant.client.id, grant: grant.id };
}

/** grant_type=authorization_code. */
export async function checkCode(
  store: OAuthStore,
  form: URLSearchParams,
  now: number,
): Promise<OAuthGrant | Refusal> {
  const found = await store.find(form.get('code') ?? '', 'code');
  if (!found) return { error: 'invalid_grant', description: 'The authorization code is not known.' };
  const fields = fieldsOf(found.grant);
  const refuse = (error: Refusal['error'], description: string): Refusal => ({ error, description, fields });
  if (form.get('client_id') !== found.grant.client.clientId) {
    return refuse('invalid_grant', 'The code was issued to another client.');
  }
  if (!(await store.consume(found.digest))) {
    // a second use of a code means it leaked: end everything issued from it (OAuth 2.1 §4.1.3)
    await store.revokeGrant(found.grant.id);
    return refuse(
      'invalid_grant',
      'The authorization code was already used; its grant is revoked. Authorize again.',
    );
  }
  if (found.expiresAt <= now || found.grant.revokedAt !== null) {
    return refuse('invalid_grant', 'The authorization code expired; authorize again.');
  }
  if (form.get('redirect_uri') !== found.redirectUri) {
    return refuse('invalid_grant', 'redirect_uri differs from the authorization request.');
  }
  const verifier = form.get('code_verifier') ?? '';
  if (!VERIFIER.test(verifier))
    return refuse('invalid_request', 'code_verifier is missing or malformed (PKCE).');
  // loaded on the first token exchange, not at every server start
  const { calculatePKCECodeChallenge } = await import('oauth4webapi');
  if ((await calculatePKCECodeChallenge(verifier)) !== found.codeChallenge) {
    return refuse('invalid_grant', 'code_verifier does not match the code challenge.');
  }
  const resource = form.get('resource');
  if (resource !== null && resource !== found.grant.resource) {
    return refuse('invalid_target', `resource must be ${found.grant.resource}.`);
  }
  return found.grant;
}

/** grant_type=refresh_token. */
export async function checkRefresh(
  store: OAuthStore,
  form: URLSearchParams,
  now: number,
): Promise<OAuthGrant | Refusal> {
  const found = await store.find(form.get('refresh_token') ?? '', 'refresh');
  if (!found) return { error: 'invalid_grant', description: 'The refresh token is not known.' };
  const fields = fieldsOf(found.grant);
  const refuse = (error: Refusal['error'], description: string): Refusal => ({ error, description, fields });
  if (form.get('client_id') !== found.grant.client.clientId) {
    return refuse('invalid_grant', 'The refresh token belongs to another client.');
  }
  if (found.grant.revokedAt !== null)
    return refuse('invalid_grant', 'The grant was revoked; authorize again.');
  if (!(await store.consume(found.digest))) {
    // a rotated-out refresh token came back: someone else holds it, so the grant ends
    await store.revokeGrant(found.grant.id);
    return refuse(
      'invalid_grant',
      'The refresh token was already used; the grant is revoked. Authorize again.',
    );
  }
  if (found.expiresAt <= now) return refuse('invalid_grant', 'The refresh token expired; authorize again.');
  const scope = form.get('scope');
  if (scope?.split(' ').some((s) => s && !found.grant.scopes.includes(s))) {
    return refuse('invalid_scope', 'A refresh cannot widen the granted scopes.');
  }
  const resource = form.get('resource');
  if (resource !== null && resource !== found.grant.resource) {
    return refuse('invalid_target', `resource must be ${found.grant.resource}.`);
  }
  return found.grant;
}
