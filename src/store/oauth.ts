/**
 * The OAuth store: MCP clients signed in with OAuth, the grants a person approved and the
 * secrets (codes, access and refresh tokens) issued for them. A secret is stored only as its
 * SHA-256 digest; "used" is one conditional write, so a code or refresh token works exactly
 * once even when two requests (or two servers) race.
 */
import { createHash } from 'node:crypto';

/** A registered client. `metadataUrl` is set for clients known by their metadata document. */
export interface OAuthClient {
  id: string;
  clientId: string;
  name: string;
  redirectUris: string[];
  metadataUrl: string | null;
  registeredAt: number;
}

/** What a person approved for one client. */
export interface OAuthGrant {
  id: string;
  client: OAuthClient;
  scopes: string[];
  resource: string;
  grantedAt: number;
  lastUsedAt: number | null;
  revokedAt: number | null;
}

export type SecretKind = 'code' | 'access' | 'refresh';

/** A stored secret with its grant. */
export interface StoredSecret {
  digest: string;
  kind: SecretKind;
  grant: OAuthGrant;
  expiresAt: number;
  usedAt: number | null;
  redirectUri: string | null;
  codeChallenge: string | null;
}

/** The digest a secret is stored and looked up by. */
export function secretDigest(secret: string): string {
  return createHash('sha256').update(secret).digest('base64url');
}

/** Clients, grants and secrets. */
export interface OAuthStore {
  /**
   * Registers a client, or (for a metadata document URL already known) refreshes its name and
   * redirect URIs. Dynamically registered clients get a fresh random client_id.
   */
  saveClient(input: { name: string; redirectUris: string[]; metadataUrl?: string }): Promise<OAuthClient>;
  clientByClientId(clientId: string): Promise<OAuthClient | null>;
  /** Keeps at most `max` registered clients that never got a grant, dropping the oldest; how many went. */
  pruneUnusedClients(max: number): Promise<number>;
  createGrant(client: OAuthClient, scopes: readonly string[], resource: string): Promise<OAuthGrant>;
  grant(id: string): Promise<OAuthGrant | null>;
  /** Issues a new secret of `kind` for a grant; returns it (the only time it exists in clear). */
  issue(
    grantId: string,
    kind: SecretKind,
    ttlMs: number,
    code?: { redirectUri: string; codeChallenge: string },
  ): Promise<{ secret: string; expiresAt: number }>;
  /** The stored secret of `kind` with this value, whatever its state; null when unknown. */
  find(secret: string, kind: SecretKind): Promise<StoredSecret | null>;
  /** Marks a secret used (or revoked); true only for the one caller that changed it. */
  consume(digest: string): Promise<boolean>;
  /** Drops secrets expired for a day; how many went. */
  pruneExpired(): Promise<number>;
  touch(grantId: string): Promise<void>;
  /**
   * Replaces the scopes of a live grant (the owner opens or closes a named computer to the
   * client on the dock's Clients page); the grant as changed, or null when it is not live.
   */
  setScopes(grantId: string, scopes: readonly string[]): Promise<OAuthGrant | null>;
  /** Revokes one grant and every secret of it; false when it was not live. */
  revokeGrant(grantId: string): Promise<boolean>;
  /** Revokes every live grant of a client (by Paddock's id or its client_id); the grant ids. */
  revokeClient(idOrClientId: string): Promise<string[]>;
  /** Live grants, newest first. */
  liveGrants(): Promise<OAuthGrant[]>;
  /** Which of these grants are revoked (or gone). */
  revokedAmong(grantIds: readonly string[]): Promise<string[]>;
}
