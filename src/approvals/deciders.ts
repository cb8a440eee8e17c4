/**
 * Who may decide whose approvals (paddock.yaml `approvals.deciders`): the person in the calling
 * MCP client itself (elicitation), the dock, the CLI. The owner's own client may decide its own
 * calls when `elicitation` is listed for the owner; a third party (an OAuth client, an agent)
 * never decides for itself — it is decided for in the dock or the CLI, or by nobody, in which
 * case its call waits until its approval expires and is denied.
 */
import { PaddockError } from '../shared/errors.js';
import type { Principal } from '../shared/principal.js';

/** Where a person may decide an approval. */
export type Decider = 'elicitation' | 'dock' | 'cli';

/** Who may decide the calls of each kind of principal. */
export interface Deciders {
  owner: readonly Decider[];
  clients: readonly Decider[];
  agents: readonly Decider[];
}

/** The defaults: the owner's own client may decide for itself; third parties only in the dock or the CLI. */
export const DEFAULT_DECIDERS: Deciders = {
  owner: ['elicitation', 'dock', 'cli'],
  clients: ['dock', 'cli'],
  agents: ['dock', 'cli'],
};

/** The setting under `approvals.deciders` that covers `principal`. */
function settingOf(principal: Principal): keyof Deciders {
  return principal.kind === 'owner' ? 'owner' : principal.kind === 'client' ? 'clients' : 'agents';
}

/** Where a person may decide the calls of `principal` (a third party never by elicitation). */
export function decidersOf(deciders: Deciders, principal: Principal): readonly Decider[] {
  const listed = deciders[settingOf(principal)];
  return principal.kind === 'owner' ? listed : listed.filter((d) => d !== 'elicitation');
}

/** Throws PERMISSION_REQUIRED when a decision made `via` may not decide a call of `principal`. */
export function assertMayDecide(deciders: Deciders, principal: Principal, via: Decider, id: string): void {
  const allowed = decidersOf(deciders, principal);
  if (allowed.includes(via)) return;
  const who = via === 'elicitation' ? 'the calling client' : `the ${via}`;
  throw new PaddockError(
    'PERMISSION_REQUIRED',
    `Approval "${id}" cannot be decided by ${who}: approvals.deciders.${settingOf(principal)} lists ${allowed.join(', ') || 'no one'}. Decide it there, or change approvals.deciders in paddock.yaml.`,
    { id },
  );
}
