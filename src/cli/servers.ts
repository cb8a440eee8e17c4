import { parseToolCall } from '../integrations/cli.js';
import { CONFIG_OPTION, out, parseCommandArgs, UsageError } from './args.js';
import { runAct } from './remote.js';

const HELP = `Usage:
  paddock servers list [--json]                 upstream MCP servers and plugins, with their state
  paddock servers tools <server> [--json]       the tools of one server (starts it if needed)
  paddock servers call <server>_<tool> 'JSON'   call an upstream tool through the gateway
  paddock servers logs <server>                 what the server printed on stderr in this run

Servers come from .paddock/mcp_servers.yaml (or .json) next to paddock.yaml. When a Paddock
server runs for the data directory, these commands ask it (its upstream servers, their logs).`;

export async function serversCommand(args: string[]): Promise<number> {
  const { values, positionals } = parseCommandArgs('servers', args, {
    ...CONFIG_OPTION,
    json: { type: 'boolean' },
    help: { type: 'boolean', short: 'h' },
  });
  const [sub, name, json] = positionals;
  if (values.help || !sub) {
    out(HELP);
    return values.help ? 0 : 2;
  }
  const asJson = values.json === true;
  switch (sub) {
    case 'list':
      return runAct(values, { command: 'servers', sub, name: '', json: asJson });
    case 'tools':
    case 'logs':
      if (!name) throw new UsageError(`servers ${sub} needs a server name.`);
      return runAct(values, { command: 'servers', sub, name, json: asJson });
    case 'call': {
      const call = parseToolCall(name ?? '', json);
      return runAct(values, { command: 'servers', sub, name: call.name, input: call.input, json: asJson });
    }
    default:
      throw new UsageError(`unknown subcommand "${sub}"; use list, tools, call or logs.`);
  }
}
