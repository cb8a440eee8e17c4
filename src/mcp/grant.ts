/** The OAuth grant an `/mcp` request was admitted with, and the principal it makes. */
import { type ClientPrincipal, OWNER, type Principal } from '../shared/principal.js';

/** An OAuth grant a request was admitted with: its calls are `mcp:<client>:<session>`. */
export interface McpGrant {
  id: string;
  /** Paddock's id of the client (the audit caller names it). */
  client: string;
  /** The name the client registered (the principal's display name). */
  clientName: string;
  /** Tool sets the grant's scopes open. */
  toolsets: readonly string[];
  /** Named computers the grant opens (`computer:<name>` scopes). */
  computers: readonly string[];
}

/** The principal of a request admitted with `grant` (the owner without one). */
export function principalOfGrant(grant: McpGrant | undefined): Principal {
  if (!grant) return OWNER;
  const client: ClientPrincipal = {
    kind: 'client',
    id: grant.client,
    name: grant.clientName,
    computers: grant.computers,
  };
  return client;
}
