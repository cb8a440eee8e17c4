/**
 * OAuth clients, grants and secrets on PostgreSQL. Using a secret is one conditional UPDATE,
 * so a code or refresh token works exactly once even when two servers race for it.
 */
import { randomBytes } from 'node:crypto';
import { randomId } from '../../shared/ids.js';
import {
  type OAuthClient,
  type OAuthGrant,
  type OAuthStore,
  type SecretKind,
  type StoredSecret,
  secretDigest,
} from '../oauth.js';
import {
  type ClientRow,
  GRANT_SELECT,
  type GrantRow,
  type SecretRow,
  toClient,
  toGrant,
  toSecret,
} from '../oauth-rows.js';
import type { PgDatabase } from './database.js';

const STORE = 'OAuth';

const CLIENT_COLUMNS = 'id, client_id, name, redirect_uris, metadata_url, registered_at';

/** `oauth_clients`, `oauth_grants` and `oauth_secrets` on PostgreSQL. */
export class PgOAuthStore implements OAuthStore {
  constructor(
    private readonly db: PgDatabase,
    private readonly now: () => number = Date.now,
  ) {}

  async saveClient(input: {
    name: string;
    redirectUris: string[];
    metadataUrl?: string;
  }): Promise<OAuthClient> {
    const clientId = input.metadataUrl ?? randomId('pdk', 18);
    const rows = await this.db.rows<ClientRow>(
      STORE,
      `INSERT INTO oauth_clients (id, client_id, name, redirect_uris, metadata_url, registered_at)
       VALUES ($1, $2, $3, $4, $5, $6)
       ON CONFLICT (client_id) DO UPDATE SET name = excluded.name, redirect_uris = excluded.redirect_uris
       RETURNING ${CLIENT_COLUMNS}`,
      [
        randomId('cl', 6),
        clientId,
        input.name,
        JSON.stringify(input.redirectUris),
        input.metadataUrl ?? null,
        this.now(),
      ],
    );
    return toClient(rows[0] as ClientRow);
  }

  async clientByClientId(clientId: string): Promise<OAuthClient | null> {
    const rows = await this.db.rows<ClientRow>(
      STORE,
      `SELECT ${CLIENT_COLUMNS} FROM oauth_clients WHERE client_id = $1`,
      [clientId],
    );
    return rows[0] ? toClient(rows[0]) : null;
  }

  async pruneUnusedClients(max: number): Promise<number> {
    const result = await this.db.run(
      STORE,
      `DELETE FROM oauth_clients WHERE id IN (
         SELECT id FROM oauth_clients c WHERE NOT EXISTS (SELECT 1 FROM oauth_grants g WHERE g.client = c.id)
         ORDER BY registered_at DESC, seq DESC OFFSET $1)`,
      [max],
    );
    return result.rowCount ?? 0;
  }

  async createGrant(client: OAuthClient, scopes: readonly string[], resource: string): Promise<OAuthGrant> {
    const id = randomId('gr', 9);
    await this.db.run(
      STORE,
      'INSERT INTO oauth_grants (id, client, scopes, resource, granted_at) VALUES ($1, $2, $3, $4, $5)',
      [id, client.id, scopes.join(' '), resource, this.now()],
    );
    return (await this.grant(id)) as OAuthGrant;
  }

  async grant(id: string): Promise<OAuthGrant | null> {
    const rows = await this.db.rows<GrantRow>(STORE, `${GRANT_SELECT} WHERE g.id = $1`, [id]);
    return rows[0] ? toGrant(rows[0]) : null;
  }

  async issue(
    grantId: string,
    kind: SecretKind,
    ttlMs: number,
    code?: { redirectUri: string; codeChallenge: string },
  ): Promise<{ secret: string; expiresAt: number }> {
    const secret = randomBytes(32).toString('base64url');
    const expiresAt = this.now() + ttlMs;
    await this.db.run(
      STORE,
      `INSERT INTO oauth_secrets (digest, grant_id, kind, expires_at, redirect_uri, code_challenge)
       VALUES ($1, $2, $3, $4, $5, $6)`,
      [
        secretDigest(secret),
        grantId,
        kind,
        expiresAt,
        code?.redirectUri ?? null,
        code?.codeChallenge ?? null,
      ],
    );
    return { secret, expiresAt };
  }

  async find(secret: string, kind: SecretKind): Promise<StoredSecret | null> {
    if (secret.length === 0 || secret.length > 512) return null;
    const rows = await this.db.rows<SecretRow>(
      STORE,
      'SELECT digest, grant_id, expires_at, used_at, redirect_uri, code_challenge FROM oauth_secrets WHERE digest = $1 AND kind = $2',
      [secretDigest(secret), kind],
    );
    const row = rows[0];
    if (!row) return null;
    const grant = await this.grant(row.grant_id);
    if (!grant) return null;
    return toSecret(row, kind, grant);
  }

  async consume(digest: string): Promise<boolean> {
    const result = await this.db.run(
      STORE,
      'UPDATE oauth_secrets SET used_at = $1 WHERE digest = $2 AND used_at IS NULL',
      [this.now(), digest],
    );
    return result.rowCount === 1;
  }

  async pruneExpired(): Promise<number> {
    const result = await this.db.run(STORE, 'DELETE FROM oauth_secrets WHERE expires_at < $1', [
      this.now() - 86_400_000,
    ]);
    return result.rowCount ?? 0;
  }

  async touch(grantId: string): Promise<void> {
    await this.db.run(STORE, 'UPDATE oauth_grants SET last_used_at = $1 WHERE id = $2', [
      this.now(),
      grantId,
    ]);
  }

  async setScopes(grantId: string, scopes: readonly string[]): Promise<OAuthGrant | null> {
    const rows = await this.db.rows<{ id: string }>(
      STORE,
      'UPDATE oauth_grants SET scopes = $1 WHERE id = $2 AND revoked_at IS NULL RETURNING id',
      [scopes.join(' '), grantId],
    );
    return rows.length === 1 ? this.grant(grantId) : null;
  }

  /** One statement: the grant and its secrets are revoked together or not at all. */
  async revokeGrant(grantId: string): Promise<boolean> {
    const rows = await this.db.rows<{ n: number }>(
      STORE,
      `WITH revoked AS (
         UPDATE oauth_grants SET revoked_at = $1 WHERE id = $2 AND revoked_at IS NULL RETURNING id
       ), secrets AS (
         UPDATE oauth_secrets SET used_at = $1 WHERE grant_id = $2 AND used_at IS NULL
       )
       SELECT count(*)::bigint AS n FROM revoked`,
      [this.now(), grantId],
    );
    return rows[0]?.n === 1;
  }

  async revokeClient(idOrClientId: string): Promise<string[]> {
    const rows = await this.db.rows<{ id: string }>(
      STORE,
      `SELECT g.id FROM oauth_grants g JOIN oauth_clients c ON c.id = g.client
       WHERE (c.id = $1 OR c.client_id = $1) AND g.revoked_at IS NULL ORDER BY g.seq`,
      [idOrClientId],
    );
    const ids = rows.map((r) => r.id);
    for (const id of ids) await this.revokeGrant(id);
    return ids;
  }

  async liveGrants(): Promise<OAuthGrant[]> {
    const rows = await this.db.rows<GrantRow>(
      STORE,
      `${GRANT_SELECT} WHERE g.revoked_at IS NULL ORDER BY g.granted_at DESC, g.seq DESC`,
    );
    return rows.map(toGrant);
  }

  async revokedAmong(grantIds: readonly string[]): Promise<string[]> {
    if (grantIds.length === 0) return [];
    const rows = await this.db.rows<{ id: string }>(
      STORE,
      'SELECT id FROM oauth_grants WHERE revoked_at IS NULL AND id = ANY($1::text[])',
      [[...grantIds]],
    );
    const live = new Set(rows.map((r) => r.id));
    return grantIds.filter((id) => !live.has(id));
  }
}
