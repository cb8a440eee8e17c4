/**
 * OAuth sign-in for MCP clients: Paddock's `/mcp` is a protected resource and Paddock its own
 * authorization server; the person approves each client in the dock. `createOAuth` builds the
 * routes and the access-token check that `paddock serve` hands to the WebApp.
 */
import type { IncomingMessage } from 'node:http';
import type { McpGrant } from '../../mcp/grant.js';
import type { Logger } from '../../shared/logger.js';
import { computersOfScopes } from '../../shared/principal.js';
import type { WebRoute } from '../app.js';
import { LaunchNonces } from '../dock/launch-page.js';
import { authorizeRoute, type ConsentSessions } from './authorize.js';
import { ClientResolver, type MetadataFetcher } from './client-metadata.js';
import { clientsRoute } from './clients-page.js';
import { challenge, toolsetsOf } from './protocol.js';
import { type AccessCheck, type OAuthLimits, OAuthServer } from './server.js';

export { CLIENTS_PATH } from './clients-page.js';
export { SCOPES, toolsetsOf } from './protocol.js';
export type { OAuthLimits } from './server.js';

import type { OAuthStore } from '../../store/oauth.js';

export type { OAuthGrant, OAuthStore } from '../../store/oauth.js';

export interface OAuthOptions {
  /** Clients, grants and tokens (shared by every server of one store). */
  store: OAuthStore;
  logger: Logger;
  /** The dock's sign-in sessions: only a signed-in person can approve a client. */
  sessions: ConsentSessions;
  publicUrl?: string;
  limits?: Partial<OAuthLimits>;
  /** How client ID metadata documents are fetched (default: https to public addresses only). */
  fetchMetadata?: MetadataFetcher;
  now?: () => number;
}

/** What the WebApp needs to admit an MCP client that signed in with OAuth. */
export interface McpOAuth {
  verify(
    token: string,
    req: IncomingMessage,
  ): Promise<{ ok: true; grant: McpGrant } | Extract<AccessCheck, { ok: false }>>;
  /** The WWW-Authenticate value of a 401 (pointing at the resource metadata). */
  challenge(req: IncomingMessage, error?: { code: string; description: string }): string;
}

export interface OAuth extends McpOAuth {
  store: OAuthStore;
  routes: WebRoute[];
  /**
   * Subscribes to revocations made in the dock: everything of the client must end; the page
   * answers once every listener has settled.
   */
  onRevoked(listener: (clientId: string, grantIds: readonly string[]) => Promise<void> | void): void;
}

export function createOAuth(options: OAuthOptions): OAuth {
  const logger = options.logger.child({ domain: 'oauth' });
  const store = options.store;
  const server = new OAuthServer({
    store,
    logger,
    ...(options.publicUrl === undefined ? {} : { publicUrl: options.publicUrl }),
    ...(options.limits === undefined ? {} : { limits: options.limits }),
    ...(options.now === undefined ? {} : { now: options.now }),
  });
  const listeners: ((clientId: string, ids: readonly string[]) => Promise<void> | void)[] = [];
  const routes = [
    ...server.routes(),
    authorizeRoute({
      server,
      clients: new ClientResolver(store, options.fetchMetadata),
      sessions: options.sessions,
      logger,
      ...(options.now === undefined ? {} : { now: options.now }),
    }),
    clientsRoute({
      store,
      sessions: options.sessions,
      nonces: new LaunchNonces(),
      logger,
      onRevoked: async (clientId, ids) => {
        for (const l of listeners) await l(clientId, ids);
      },
    }),
  ];
  return {
    store,
    routes,
    verify: async (token, req) => {
      const check = await server.verifyAccess(token, req);
      return check.ok ? { ok: true, grant: mcpGrantOf(check.grant) } : check;
    },
    challenge: (req, error) => challenge(server.issuer(req), error),
    onRevoked: (listener) => {
      listeners.push(listener);
    },
  };
}

/** The MCP endpoint's view of a grant: who (for the audit caller), which tool sets and named computers. */
export function mcpGrantOf(grant: {
  id: string;
  client: { id: string; name: string };
  scopes: string[];
}): McpGrant {
  return {
    id: grant.id,
    client: grant.client.id,
    clientName: grant.client.name,
    toolsets: toolsetsOf(grant.scopes),
    computers: computersOfScopes(grant.scopes),
  };
}
