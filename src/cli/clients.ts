import { CONFIG_OPTION, out, parseCommandArgs, UsageError } from './args.js';
import { withStores } from './context.js';

const HELP = `Usage: paddock clients list [--json]
       paddock clients revoke ID

MCP clients that signed in with OAuth and were approved in the dock. revoke takes the
client's id (cl_…) from the list, or its client_id; the client's tokens stop working at once
and a running server closes its sessions within two seconds.`;

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
  return withStores(values, async ({ oauth: store }) => {
    if (action === 'revoke') {
      const ended = await store.revokeClient(id!);
      if (ended.length === 0) {
        process.stderr.write(`paddock clients: ${id} holds no live grant; see paddock clients list.\n`);
        return 1;
      }
      out(`Revoked ${id} (${ended.length} grant${ended.length === 1 ? '' : 's'}).`);
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
