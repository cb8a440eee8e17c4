/**
 * Principals: on whose behalf a call is made. Every caller context carries one, and every
 * decision that separates one party from another (which computers, which memories, which
 * quota, who may approve, what a revocation ends) is taken on it, never on the caller string.
 *
 * - the owner: the holder of the server token, the person at the dock, the CLI on the host
 *   and the stdio bridge (`paddock mcp`, through the run directory's socket);
 * - an OAuth client: one principal per registered client (Paddock's id `cl_…`), whatever
 *   grant or session it uses; it reaches what its grant names;
 * - an agent: one principal per agent name, shared by all of its runs.
 *
 * A tool-channel call inherits the principal of the call that started its job.
 */

/** The owner of the server: reaches every computer, decides every approval. */
export interface OwnerPrincipal {
  kind: 'owner';
}

/** An MCP client that signed in with OAuth and was approved by the owner. */
export interface ClientPrincipal {
  kind: 'client';
  /** Paddock's id of the client (`cl_…`), stable across its grants and sessions. */
  id: string;
  /** The name the client registered (what the dock shows). */
  name: string;
  /** Named computers its grant opens (`computer:<name>` scopes); its private ones are always its own. */
  computers: readonly string[];
}

/** An agent of `.paddock/agents/<name>`; all of its runs are one principal. */
export interface AgentPrincipal {
  kind: 'agent';
  name: string;
}

export type Principal = OwnerPrincipal | ClientPrincipal | AgentPrincipal;

/** The owner (one value; it carries nothing else). */
export const OWNER: OwnerPrincipal = Object.freeze({ kind: 'owner' });

/** The key of a principal, as audit rows, quotas and configuration name it: `owner`, `client:<id>`, `agent:<name>`. */
export function principalKey(p: Principal): string {
  switch (p.kind) {
    case 'owner':
      return 'owner';
    case 'client':
      return `client:${p.id}`;
    case 'agent':
      return `agent:${p.name}`;
  }
}

/** What a person reads for a principal: "owner", the client's registered name, "agent <name>". */
export function principalName(p: Principal): string {
  switch (p.kind) {
    case 'owner':
      return 'owner';
    case 'client':
      return p.name;
    case 'agent':
      return `agent ${p.name}`;
  }
}

/** Whether two principals are the same party. */
export function samePrincipal(a: Principal, b: Principal): boolean {
  return principalKey(a) === principalKey(b);
}

/** Whether the principal is a third party (anyone but the owner). */
export function isThirdParty(p: Principal): boolean {
  return p.kind !== 'owner';
}

/** The prefix of OAuth scopes that open one named computer to a client. */
export const COMPUTER_SCOPE_PREFIX = 'computer:';

/** The named computers a list of OAuth scopes opens (`computer:<name>` entries). */
export function computersOfScopes(scopes: readonly string[]): string[] {
  return scopes
    .filter((s) => s.startsWith(COMPUTER_SCOPE_PREFIX) && s.length > COMPUTER_SCOPE_PREFIX.length)
    .map((s) => s.slice(COMPUTER_SCOPE_PREFIX.length));
}
