/**
 * Paddock as its own OAuth 2.1 authorization server for the MCP endpoint: metadata,
 * dynamic client registration, the token endpoint (authorization code with PKCE S256,
 * refresh with rotation), revocation, and the check of access tokens presented to `/mcp`.
 * The consent step lives in authorize.ts (the dock's page).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from '../../shared/logger.js';
import type { OAuthGrant, OAuthStore } from '../../store/oauth.js';
import type { WebRoute } from '../app.js';
import { readForm } from '../dock/launch-page.js';
import {
  acceptableRedirectUri,
  issuerOf,
  OAUTH_PATHS,
  readJsonBody,
  resourceMetadata,
  resourceOf,
  sendJson,
  sendOAuthError,
  serverMetadata,
} from './protocol.js';
import { checkCode, checkRefresh } from './token-grants.js';

/** Limits and lifetimes; the defaults suit `paddock serve`. */
export interface OAuthLimits {
  accessTokenTtlMs: number;
  refreshTokenTtlMs: number;
  codeTtlMs: number;
  /** Registrations accepted per minute (all clients together). */
  registrationsPerMinute: number;
  /** Registered clients without a grant kept at once; the oldest go first. */
  maxUnusedClients: number;
}

export const DEFAULT_OAUTH_LIMITS: OAuthLimits = {
  accessTokenTtlMs: 3_600_000,
  refreshTokenTtlMs: 30 * 86_400_000,
  codeTtlMs: 60_000,
  registrationsPerMinute: 20,
  maxUnusedClients: 200,
};

export interface OAuthServerOptions {
  store: OAuthStore;
  logger: Logger;
  publicUrl?: string;
  limits?: Partial<OAuthLimits>;
  now?: () => number;
}

/** The outcome of checking a presented access token. */
export type AccessCheck = { ok: true; grant: OAuthGrant } | { ok: false; description: string };

const MAX_REGISTRATION_BYTES = 16_384;

/** Endpoints besides authorization, and the access-token check. */
export class OAuthServer {
  readonly limits: OAuthLimits;
  private readonly registrations: number[] = [];
  private readonly now: () => number;

  constructor(private readonly options: OAuthServerOptions) {
    this.limits = { ...DEFAULT_OAUTH_LIMITS, ...options.limits };
    this.now = options.now ?? Date.now;
  }

  get store(): OAuthStore {
    return this.options.store;
  }

  issuer(req: IncomingMessage): string {
    return issuerOf(req, this.options.publicUrl);
  }

  /** Checks an access token for the resource this request reached (audience included). */
  async verifyAccess(token: string, req: IncomingMessage): Promise<AccessCheck> {
    const found = await this.store.find(token, 'access');
    const refuse = (description: string): AccessCheck => {
      this.options.logger.warn('oauth.refused', {
        endpoint: 'mcp',
        error: 'invalid_token',
        reason: description,
      });
      return { ok: false, description };
    };
    if (!found) return refuse('The access token is not known here; sign in again.');
    if (found.usedAt !== null || found.grant.revokedAt !== null)
      return refuse('The access token was revoked; sign in again.');
    if (found.expiresAt <= this.now())
      return refuse('The access token expired; refresh it or sign in again.');
    if (found.grant.resource !== resourceOf(this.issuer(req)))
      return refuse(`The access token was issued for ${found.grant.resource}, not for this resource.`);
    const lastUsed = found.grant.lastUsedAt;
    if (lastUsed === null || this.now() - lastUsed > 60_000) await this.store.touch(found.grant.id);
    return { ok: true, grant: found.grant };
  }

  /** Routes for metadata, registration, token and revocation (all public: they are the way in). */
  routes(): WebRoute[] {
    const route = (
      method: 'GET' | 'POST',
      path: string,
      fn: (req: IncomingMessage, res: ServerResponse) => Promise<void> | void,
    ): WebRoute => ({
      public: true,
      crossOrigin: true,
      match: (req, url) =>
        url.pathname === path &&
        (req.method === method || req.method === 'OPTIONS' || (method === 'GET' && req.method === 'HEAD')),
      handle: (req, res) => {
        res.setHeader('access-control-allow-origin', '*');
        if (req.method !== 'OPTIONS') return fn(req, res);
        res.writeHead(204, {
          'access-control-allow-methods': `${method}, OPTIONS`,
          'access-control-allow-headers': 'content-type, authorization, mcp-protocol-version',
          'access-control-max-age': '600',
        });
        res.end();
      },
    });
    const metadata = (body: (issuer: string) => unknown) => (req: IncomingMessage, res: ServerResponse) =>
      sendJson(res, 200, body(this.issuer(req)));
    return [
      route('GET', OAUTH_PATHS.resourceMetadata, metadata(resourceMetadata)),
      route('GET', `${OAUTH_PATHS.resourceMetadata}/mcp`, metadata(resourceMetadata)),
      route('GET', OAUTH_PATHS.serverMetadata, metadata(serverMetadata)),
      route('POST', OAUTH_PATHS.register, (req, res) => this.register(req, res)),
      route('POST', OAUTH_PATHS.token, (req, res) => this.token(req, res)),
      route('POST', OAUTH_PATHS.revoke, (req, res) => this.revoke(req, res)),
    ];
  }

  private refuse(
    res: ServerResponse,
    endpoint: string,
    status: number,
    error: string,
    description: string,
    fields: Record<string, unknown> = {},
  ): void {
    this.options.logger.warn('oauth.refused', { endpoint, error, reason: description, ...fields });
    sendOAuthError(res, status, error, description);
  }

  /** RFC 7591 registration of a public client (PKCE, no secret). */
  private async register(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const now = this.now();
    while (this.registrations.length > 0 && this.registrations[0]! <= now - 60_000)
      this.registrations.shift();
    if (this.registrations.length >= this.limits.registrationsPerMinute) {
      this.options.logger.warn('oauth.refused', { endpoint: 'register', error: 'rate_limited' });
      res.setHeader('retry-after', '60');
      return sendOAuthError(
        res,
        429,
        'temporarily_unavailable',
        `More than ${this.limits.registrationsPerMinute} registrations in a minute; retry in a minute.`,
      );
    }
    const body = (await readJsonBody(req, MAX_REGISTRATION_BYTES)) as Record<string, unknown> | undefined;
    if (!body || typeof body !== 'object' || Array.isArray(body)) {
      return this.refuse(
        res,
        'register',
        400,
        'invalid_client_metadata',
        'Send the client metadata as a JSON object.',
      );
    }
    const uris = body.redirect_uris;
    if (
      !Array.isArray(uris) ||
      uris.length === 0 ||
      uris.length > 10 ||
      !uris.every((u) => typeof u === 'string')
    ) {
      return this.refuse(
        res,
        'register',
        400,
        'invalid_redirect_uri',
        'redirect_uris must list one to ten URIs.',
      );
    }
    const bad = (uris as string[]).find((u) => !acceptableRedirectUri(u));
    if (bad !== undefined) {
      return this.refuse(
        res,
        'register',
        400,
        'invalid_redirect_uri',
        `${bad.slice(0, 200)} is not an acceptable redirect URI: use https, http on a loopback address, or an app's own scheme.`,
      );
    }
    const method = body.token_endpoint_auth_method ?? 'none';
    if (method !== 'none') {
      return this.refuse(
        res,
        'register',
        400,
        'invalid_client_metadata',
        'Only public clients are supported: set token_endpoint_auth_method to "none" and use PKCE.',
      );
    }
    const grantTypes = (body.grant_types as unknown[] | undefined) ?? ['authorization_code'];
    if (
      !Array.isArray(grantTypes) ||
      grantTypes.some((g) => g !== 'authorization_code' && g !== 'refresh_token')
    ) {
      return this.refuse(
        res,
        'register',
        400,
        'invalid_client_metadata',
        'grant_types may hold only authorization_code and refresh_token.',
      );
    }
    const rawName = typeof body.client_name === 'string' ? body.client_name.trim() : '';
    const name = rawName.slice(0, 100) || 'Unnamed client';
    this.registrations.push(now);
    const client = await this.store.saveClient({ name, redirectUris: uris as string[] });
    await this.store.pruneUnusedClients(this.limits.maxUnusedClients);
    this.options.logger.info('oauth.registered', { client: client.id, name });
    sendJson(res, 201, {
      client_id: client.clientId,
      client_id_issued_at: Math.floor(client.registeredAt / 1000),
      client_name: name,
      redirect_uris: client.redirectUris,
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
    });
  }

  private async token(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const form = await readForm(req);
    if (!form) {
      return this.refuse(
        res,
        'token',
        400,
        'invalid_request',
        'Send the request as application/x-www-form-urlencoded.',
      );
    }
    const grantType = form.get('grant_type');
    if (grantType !== 'authorization_code' && grantType !== 'refresh_token') {
      return this.refuse(
        res,
        'token',
        400,
        'unsupported_grant_type',
        'grant_type must be authorization_code or refresh_token.',
      );
    }
    const outcome =
      grantType === 'authorization_code'
        ? await checkCode(this.store, form, this.now())
        : await checkRefresh(this.store, form, this.now());
    if ('error' in outcome) {
      return this.refuse(res, 'token', 400, outcome.error, outcome.description, outcome.fields);
    }
    await this.sendTokens(res, outcome);
  }

  private async sendTokens(res: ServerResponse, grant: OAuthGrant): Promise<void> {
    await this.store.pruneExpired();
    const access = await this.store.issue(grant.id, 'access', this.limits.accessTokenTtlMs);
    const refresh = await this.store.issue(grant.id, 'refresh', this.limits.refreshTokenTtlMs);
    this.options.logger.info('oauth.token_issued', { client: grant.client.id, grant: grant.id });
    sendJson(res, 200, {
      access_token: access.secret,
      token_type: 'Bearer',
      expires_in: Math.round(this.limits.accessTokenTtlMs / 1000),
      refresh_token: refresh.secret,
      scope: grant.scopes.join(' '),
    });
  }

  /** RFC 7009: always 200; a refresh token ends its whole grant, an access token itself. */
  private async revoke(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const form = await readForm(req);
    if (!form) {
      return this.refuse(
        res,
        'revoke',
        400,
        'invalid_request',
        'Send the request as application/x-www-form-urlencoded.',
      );
    }
    const token = form.get('token') ?? '';
    const hint = form.get('token_type_hint');
    const kinds =
      hint === 'access_token' ? (['access', 'refresh'] as const) : (['refresh', 'access'] as const);
    for (const kind of kinds) {
      const found = await this.store.find(token, kind);
      if (!found) continue;
      if (found.grant.client.clientId !== form.get('client_id')) {
        return this.refuse(res, 'revoke', 401, 'invalid_client', 'The token belongs to another client.');
      }
      if (kind === 'refresh') await this.store.revokeGrant(found.grant.id);
      else await this.store.consume(found.digest);
      this.options.logger.info('oauth.revoked', {
        client: found.grant.client.id,
        grant: found.grant.id,
        kind,
      });
      break;
    }
    sendJson(res, 200, {});
  }
}
