import { CONFIG_OPTION, out, parseCommandArgs, UsageError } from './args.js';
import { parseToolCall } from './format/servers.js';
import { runAct } from './remote.js';

const HELP = `Usage:
  paddock servers list [--json]                 upstream MCP servers and plugins, with their state
  paddock servers tools <server> [--json]       the tools of one server (starts it if needed), with hashes
  paddock servers call <server>_<tool> 'JSON'   call an upstream tool through the gateway
  paddock servers logs <server>                 what the server printed on stderr in this run
  paddock servers review <server> [--json]      tools that changed since they were pinned, with a diff
  paddock servers review <server> --accept|--reject [--tool NAME]...
                                                trust the changed definitions, or keep them quarantined

Servers come from .paddock/mcp_servers.yaml (or .json) next to paddock.yaml. When a Paddock
server runs for the data directory, these commands ask it (its upstream servers, their logs).
A server's tools are pinned when first seen; a new or changed tool is quarantined (not listed,
not callable) until it is reviewed.`;

export async function serversCommand(args: string[]): Promise<number> {
  const { values, positionals } = parseCommandArgs('servers', args, {
    ...CONFIG_OPTION,
    json: { type: 'boolean' },
    accept: { type: 'boolean' },
    reject: { type: 'boolean' },
    tool: { type: 'string', multiple: true },
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
    case 'review': {
      if (!name) throw new UsageError('servers review needs a server name.');
      if (values.accept && values.reject) throw new UsageError('give --accept or --reject, not both.');
      const decision = values.accept ? 'accept' : values.reject ? 'reject' : undefined;
      const tools = values.tool as string[] | undefined;
      if (tools && !decision) throw new UsageError('--tool goes with --accept or --reject.');
      return runAct(values, {
        command: 'servers',
        sub,
        name,
        json: asJson,
        ...(decision ? { decision } : {}),
        ...(tools ? { tools } : {}),
      });
    }
    case 'call': {
      const call = parseToolCall(name ?? '', json);
      return runAct(values, { command: 'servers', sub, name: call.name, input: call.input, json: asJson });
    }
    default:
      throw new UsageError(`unknown subcommand "${sub}"; use list, tools, call, logs or review.`);
  }
}
