/**
 * OAuth clients, the grants a person approved and the secrets (codes, access and refresh
 * tokens) issued for them, in Paddock's SQLite database. A secret is stored only as its
 * SHA-256 digest; "used" is one atomic UPDATE, so a code or refresh token works exactly once
 * even when two requests race.
 */
import { randomBytes } from 'node:crypto';
import type BetterSqlite3 from 'better-sqlite3';
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
import { applyMigrations } from './migrations.js';

/** Clients, grants and secrets over one database connection. */
export class SqliteOAuthStore implements OAuthStore {
  constructor(
    private readonly db: BetterSqlite3.Database,
    private readonly now: () => number = Date.now,
  ) {
    applyMigrations(db);
  }

  /**
   * Registers a client, or (for a metadata document URL already known) refreshes its name and
   * redirect URIs. Dynamically registered clients get a fresh random client_id.
   */
  async saveClient(input: {
    name: string;
    redirectUris: string[];
    metadataUrl?: string;
  }): Promise<OAuthClient> {
    const clientId = input.metadataUrl ?? randomId('pdk', 18);
    const existing = await this.clientByClientId(clientId);
    const id = existing?.id ?? randomId('cl', 6);
    this.db
      .prepare(
        `INSERT INTO oauth_clients (id, client_id, name, redirect_uris, metadata_url, registered_at)
         VALUES (?, ?, ?, ?, ?, ?)
         ON CONFLICT (client_id) DO UPDATE SET name = excluded.name, redirect_uris = excluded.redirect_uris`,
      )
      .run(
        id,
        clientId,
        input.name,
        JSON.stringify(input.redirectUris),
        input.metadataUrl ?? null,
        this.now(),
      );
    return (await this.clientByClientId(clientId))!;
  }

  async clientByClientId(clientId: string): Promise<OAuthClient | null> {
    const row = this.db.prepare('SELECT * FROM oauth_clients WHERE client_id = ?').get(clientId) as
      | ClientRow
      | undefined;
    return row ? toClient(row) : null;
  }

  /**
   * Keeps at most `max` registered clients that never got a grant, dropping the oldest, so a
   * flood of registrations cannot grow the database without bound. Returns how many went.
   */
  async pruneUnusedClients(max: number): Promise<number> {
    return this.db
      .prepare(
        `DELETE FROM oauth_clients WHERE id IN (
           SELECT id FROM oauth_clients c WHERE NOT EXISTS (SELECT 1 FROM oauth_grants g WHERE g.client = c.id)
           ORDER BY registered_at DESC, rowid DESC LIMIT -1 OFFSET ?)`,
      )
      .run(max).changes;
  }

  async createGrant(client: OAuthClient, scopes: readonly string[], resource: string): Promise<OAuthGrant> {
    const id = randomId('gr', 9);
    this.db
      .prepare('INSERT INTO oauth_grants (id, client, scopes, resource, granted_at) VALUES (?, ?, ?, ?, ?)')
      .run(id, client.id, scopes.join(' '), resource, this.now());
    return (await this.grant(id))!;
  }

  async grant(id: string): Promise<OAuthGrant | null> {
    const row = this.db.prepare(`${GRANT_SELECT} WHERE g.id = ?`).get(id) as GrantRow | undefined;
    return row ? toGrant(row) : null;
  }

  /** Issues a new secret of `kind` for a grant; returns it (the only time it exists in clear). */
  async issue(
    grantId: string,
    kind: SecretKind,
    ttlMs: number,
    code?: { redirectUri: string; codeChallenge: string },
  ): Promise<{ secret: string; expiresAt: number }> {
    const secret = randomBytes(32).toString('base64url');
    const expiresAt = this.now() + ttlMs;
    this.db
      .prepare(
        `INSERT INTO oauth_secrets (digest, grant_id, kind, expires_at, redirect_uri, code_challenge)
         VALUES (?, ?, ?, ?, ?, ?)`,
      )
      .run(
        secretDigest(secret),
        grantId,
        kind,
        expiresAt,
        code?.redirectUri ?? null,
        code?.codeChallenge ?? null,
      );
    return { secret, expiresAt };
  }

  /** The stored secret of `kind` with this value, whatever its state; null when unknown. */
  async find(secret: string, kind: SecretKind): Promise<StoredSecret | null> {
    if (secret.length === 0 || secret.length > 512) return null;
    const row = this.db
      .prepare('SELECT * FROM oauth_secrets WHERE digest = ? AND kind = ?')
      .get(secretDigest(secret), kind) as SecretRow | undefined;
    if (!row) return null;
    const grant = await this.grant(row.grant_id);
    if (!grant) return null;
    return toSecret(row, kind, grant);
  }

  /** Marks a secret used (or revoked); true only for the one caller that changed it. */
  async consume(digest: string): Promise<boolean> {
    return (
      this.db
        .prepare('UPDATE oauth_secrets SET used_at = ? WHERE digest = ? AND used_at IS NULL')
        .run(this.now(), digest).changes === 1
    );
  }

  /**
   * Drops secrets expired for a day. A used code or rotated-out refresh token is kept until
   * then, so its reuse is recognised (and ends the grant) while it could still be honoured, and
   * an expired access token is answered as expired rather than unknown.
   */
  async pruneExpired(): Promise<number> {
    return this.db.prepare('DELETE FROM oauth_secrets WHERE expires_at < ?').run(this.now() - 86_400_000)
      .changes;
  }

  async touch(grantId: string): Promise<void> {
    this.db.prepare('UPDATE oauth_grants SET last_used_at = ? WHERE id = ?').run(this.now(), grantId);
  }

  async setScopes(grantId: string, scopes: readonly string[]): Promise<OAuthGrant | null> {
    const changed = this.db
      .prepare('UPDATE oauth_grants SET scopes = ? WHERE id = ? AND revoked_at IS NULL')
      .run(scopes.join(' '), grantId).changes;
    return changed === 1 ? this.grant(grantId) : null;
  }

  /** Revokes one grant and every secret of it; false when it was not live. */
  async revokeGrant(grantId: string): Promise<boolean> {
    const now = this.now();
    return this.db.transaction(() => {
      const changed = this.db
        .prepare('UPDATE oauth_grants SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL')
        .run(now, grantId).changes;
      this.db
        .prepare('UPDATE oauth_secrets SET used_at = ? WHERE grant_id = ? AND used_at IS NULL')
        .run(now, grantId);
      return changed === 1;
    })();
  }

  /** Revokes every live grant of a client (by Paddock's id or its client_id); the grant ids. */
  async revokeClient(idOrClientId: string): Promise<string[]> {
    const ids = (
      this.db
        .prepare(
          `SELECT g.id FROM oauth_grants g JOIN oauth_clients c ON c.id = g.client
           WHERE (c.id = ? OR c.client_id = ?) AND g.revoked_at IS NULL`,
        )
        .all(idOrClientId, idOrClientId) as { id: string }[]
    ).map((r) => r.id);
    for (const id of ids) await this.revokeGrant(id);
    return ids;
  }

  /** Live grants, newest first. */
  async liveGrants(): Promise<OAuthGrant[]> {
    return (
      this.db
        .prepare(`${GRANT_SELECT} WHERE g.revoked_at IS NULL ORDER BY g.granted_at DESC, g.rowid DESC`)
        .all() as GrantRow[]
    ).map(toGrant);
  }

  /** Which of these grants are revoked (or gone). */
  async revokedAmong(grantIds: readonly string[]): Promise<string[]> {
    if (grantIds.length === 0) return [];
    const live = new Set(
      (
        this.db
          .prepare(
            `SELECT id FROM oauth_grants WHERE revoked_at IS NULL AND id IN (${grantIds.map(() => '?').join(',')})`,
          )
          .all(...grantIds) as { id: string }[]
      ).map((r) => r.id),
    );
    return grantIds.filter((id) => !live.has(id));
  }
}
