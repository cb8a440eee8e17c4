/** Rows of the OAuth tables as both databases return them, and the records they make. */
import type { OAuthClient, OAuthGrant, SecretKind, StoredSecret } from './oauth.js';

/** A row of `oauth_clients`. */
export interface ClientRow {
  id: string;
  client_id: string;
  name: string;
  redirect_uris: string;
  metadata_url: string | null;
  registered_at: number;
}

/** A grant row joined with its client (see GRANT_SELECT). */
export interface GrantRow extends ClientRow {
  grant_id: string;
  scopes: string;
  resource: string;
  granted_at: number;
  last_used_at: number | null;
  revoked_at: number | null;
}

/** Grants with their clients; append WHERE / ORDER BY. */
export const GRANT_SELECT = `SELECT g.id AS grant_id, g.scopes, g.resource, g.granted_at, g.last_used_at, g.revoked_at,
  c.id, c.client_id, c.name, c.redirect_uris, c.metadata_url, c.registered_at
  FROM oauth_grants g JOIN oauth_clients c ON c.id = g.client`;

/** The client of a row. */
export function toClient(r: ClientRow): OAuthClient {
  return {
    id: r.id,
    clientId: r.client_id,
    name: r.name,
    redirectUris: JSON.parse(r.redirect_uris) as string[],
    metadataUrl: r.metadata_url,
    registeredAt: r.registered_at,
  };
}

/** The grant of a joined row. */
export function toGrant(r: GrantRow): OAuthGrant {
  return {
    id: r.grant_id,
    client: toClient(r),
    scopes: r.scopes.split(' ').filter(Boolean),
    resource: r.resource,
    grantedAt: r.granted_at,
    lastUsedAt: r.last_used_at,
    revokedAt: r.revoked_at,
  };
}

/** A row of `oauth_secrets` (its kind is the one looked up). */
export interface SecretRow {
  digest: string;
  grant_id: string;
  expires_at: number;
  used_at: number | null;
  redirect_uri: string | null;
  code_challenge: string | null;
}

export function toSecret(r: SecretRow, kind: SecretKind, grant: OAuthGrant): StoredSecret {
  return {
    digest: r.digest,
    kind,
    grant,
    expiresAt: r.expires_at,
    usedAt: r.used_at,
    redirectUri: r.redirect_uri,
    codeChallenge: r.code_challenge,
  };
}
