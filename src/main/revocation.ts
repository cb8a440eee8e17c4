/**
 * Revoking an OAuth client ends everything of it, wherever it runs in this server: its MCP
 * sessions close (calls under way are cancelled, waiting approvals end with them), each job it
 * started has its tool channel refused at once, its egress proxy credentials withdrawn and is
 * cancelled with every descendant, and its private computers stop. One audit row
 * (`clients.revoke`) says what was ended. The dock's Clients page, `paddock clients revoke`
 * (through the server's socket) and revocations seen in the store (another process of a
 * shared store) all end here.
 */
import type { McpHttpEndpoint } from '../mcp/http.js';
import { PaddockError } from '../shared/errors.js';
import { timeOrderedId } from '../shared/ids.js';
import { OWNER, principalKey } from '../shared/principal.js';
import type { Paddock } from './paddock.js';

/** What one revocation ended (the input of its audit row, and the CLI's answer). */
export interface ClientEnded {
  [key: string]: unknown;
  client: string;
  grants: string[];
  sessions: number;
  jobs: { jobId: string; status: string }[];
  channels: number;
  egressCredentials: number;
  computers: string[];
}

/** Ends everything of OAuth client `clientId` (Paddock's id) and writes the audit row; `by` is who revoked. */
export async function endClient(
  paddock: Paddock,
  mcp: McpHttpEndpoint,
  clientId: string,
  grants: readonly string[],
  by: string,
): Promise<ClientEnded> {
  const startedAt = Date.now();
  const started = performance.now();
  const who = principalKey({ kind: 'client', id: clientId, name: '', computers: [] });
  const reason = new PaddockError(
    'CHANNEL_CLOSED',
    'The client that started this command was revoked by the owner; its tool calls are refused from now on.',
  );
  const sessions = mcp.closeClient(clientId);
  const ended = await paddock.computer.endPrincipal(who, reason);
  const summary: ClientEnded = {
    client: clientId,
    grants: [...grants],
    sessions,
    jobs: ended.jobs,
    channels: ended.channels,
    egressCredentials: ended.egressCredentials,
    computers: ended.computers,
  };
  await paddock.audit.record({
    id: timeOrderedId('inv'),
    startedAt,
    durationMs: performance.now() - started,
    tool: 'clients.revoke',
    source: 'server',
    caller: by,
    principal: principalKey(OWNER),
    via: 'direct',
    input: summary,
    outputBytes: 0,
    success: true,
  });
  paddock.logger.info('oauth.client_ended', {
    client: clientId,
    by,
    sessions,
    jobs: ended.jobs.length,
    channels: ended.channels,
    egress: ended.egressCredentials,
    computers: ended.computers.length,
  });
  return summary;
}

/**
 * Revokes client `idOrClientId` (its id `cl_…` or its client_id) in the store and ends
 * everything of it; NOT_FOUND when it holds no live grant.
 */
export async function revokeClient(
  paddock: Paddock,
  mcp: McpHttpEndpoint,
  idOrClientId: string,
  by: string,
): Promise<ClientEnded> {
  const store = paddock.stores.oauth;
  const grants = await store.revokeClient(idOrClientId);
  const first = grants[0] === undefined ? null : await store.grant(grants[0]);
  if (!first) {
    throw new PaddockError(
      'NOT_FOUND',
      `${idOrClientId} holds no live grant; see \`paddock clients list\` for the clients that do.`,
    );
  }
  return endClient(paddock, mcp, first.client.id, grants, by);
}
