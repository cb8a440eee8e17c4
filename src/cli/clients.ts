import { instancePaths } from '../mcp/instance.js';
import { knock } from '../mcp/socket-client.js';
import { PaddockError } from '../shared/errors.js';
import { timeOrderedId } from '../shared/ids.js';
import { CONFIG_OPTION, out, parseCommandArgs, UsageError } from './args.js';
import { loadFor, withStores } from './context.js';

const HELP = `Usage: paddock clients list [--json]
       paddock clients revoke ID [--json]

MCP clients that signed in with OAuth and were approved in the dock. revoke takes the
client's id (cl_…) from the list, or its client_id. Its tokens stop working at once, and the
running server ends everything of it before this command returns: its sessions, its running
jobs (cancelled, their tool calls refused), their egress credentials and its own computers.
An audit row (tool clients.revoke) says what was ended.`;

/** Asks the running server to revoke and end the client; undefined when no server runs. */
async function revokeThroughServer(
  dataDir: string,
  id: string,
): Promise<Record<string, unknown> | undefined> {
  const result = await knock(instancePaths(dataDir), { op: 'clients', clients: { action: 'revoke', id } });
  if (result.kind !== 'answered') return undefined;
  result.socket.destroy();
  const reply = result.reply;
  if (!reply.ok) throw new PaddockError(reply.code as never, reply.message);
  return reply.ended as Record<string, unknown>;
}

function when(ms: number | null): string {
  return ms === null ? 'never' : new Date(ms).toISOString();
}

export async function clientsCommand(args: string[]): Promise<number> {
  const { values, positionals } = parseCommandArgs(
    'clients',
    args,
    { ...CONFIG_OPTION, json: { type: 'boolean' }, help: { type: 'boolean', short: 'h' } },
    true,
  );
  if (values.help) {
    out(HELP);
    return 0;
  }
  const [action, id, ...extra] = positionals;
  if (action !== 'list' && action !== 'revoke') throw new UsageError('say list or revoke (see --help).');
  if (action === 'revoke' && (!id || extra.length > 0)) throw new UsageError('revoke takes one client id.');
  if (action === 'revoke') {
    const { dataDir } = await loadFor(values);
    let ended: Record<string, unknown> | undefined;
    try {
      ended = await revokeThroughServer(dataDir, id!);
    } catch (e) {
      process.stderr.write(`paddock clients: ${(e as Error).message}\n`);
      return 1;
    }
    if (ended) {
      const jobs = (ended.jobs as unknown[] | undefined)?.length ?? 0;
      out(
        values.json
          ? JSON.stringify(ended)
          : `Revoked ${id}: ended ${ended.sessions} session(s), ${jobs} job(s), ${ended.channels} tool channel(s), ${ended.egressCredentials} egress credential(s) and ${(ended.computers as unknown[]).length} computer(s).`,
      );
      return 0;
    }
  }
  return withStores(values, async ({ oauth: store, audit }) => {
    if (action === 'revoke') {
      // no server runs: nothing of the client is running; the grants end and a row says so
      const startedAt = Date.now();
      const ended = await store.revokeClient(id!);
      if (ended.length === 0) {
        process.stderr.write(`paddock clients: ${id} holds no live grant; see paddock clients list.\n`);
        return 1;
      }
      const client = (await store.grant(ended[0]!))?.client.id ?? id!;
      const summary = {
        client,
        grants: ended,
        sessions: 0,
        jobs: [],
        channels: 0,
        egressCredentials: 0,
        computers: [],
      };
      await audit.record({
        id: timeOrderedId('inv'),
        startedAt,
        durationMs: Date.now() - startedAt,
        tool: 'clients.revoke',
        source: 'server',
        caller: 'cli',
        principal: 'owner',
        via: 'direct',
        input: summary,
        outputBytes: 0,
        success: true,
      });
      out(
        values.json
          ? JSON.stringify(summary)
          : `Revoked ${id} (${ended.length} grant${ended.length === 1 ? '' : 's'}); no server runs, so nothing else of it was running.`,
      );
      return 0;
    }
    for (const g of await store.liveGrants()) {
      const row = {
        id: g.client.id,
        name: g.client.name,
        clientId: g.client.clientId,
        scopes: g.scopes,
        grantedAt: when(g.grantedAt),
        lastUsedAt: when(g.lastUsedAt),
      };
      out(
        values.json
          ? JSON.stringify(row)
          : `${row.id}  ${row.name}  scopes=${row.scopes.join(',')}  approved ${row.grantedAt}  last used ${row.lastUsedAt}`,
      );
    }
    return 0;
  });
}
