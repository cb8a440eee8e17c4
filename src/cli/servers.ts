import {
  parseToolCall,
  renderError,
  renderToolResult,
  serverLogs,
  serversList,
  serverTools,
} from '../integrations/cli.js';
import { neutralizeControls } from '../shared/terminal-text.js';
import { out, parseCommandArgs, UsageError } from './args.js';
import { CONFIG_OPTION, withPaddock } from './context.js';
import { cliCaller, discovered } from './tools.js';

const HELP = `Usage:
  paddock servers list [--json]                 upstream MCP servers and plugins, with their state
  paddock servers tools <server> [--json]       the tools of one server (starts it if needed)
  paddock servers call <server>_<tool> 'JSON'   call an upstream tool through the gateway
  paddock servers logs <server>                 what the server printed on stderr in this run

Servers come from .paddock/mcp_servers.yaml (or .json) next to paddock.yaml.`;

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
  return withPaddock(values, async (p) => {
    switch (sub) {
      case 'list': {
        await discovered(p.integrations);
        const r = serversList(p.integrations);
        out(values.json ? JSON.stringify(r.data, null, 2) : r.text);
        return 0;
      }
      case 'tools': {
        if (!name) throw new UsageError('servers tools needs a server name.');
        const r = await serverTools(p.integrations, name);
        out(values.json ? JSON.stringify(r.data, null, 2) : r.text);
        return 0;
      }
      case 'logs': {
        if (!name) throw new UsageError('servers logs needs a server name.');
        await serverTools(p.integrations, name).catch(() => {});
        out(serverLogs(p.integrations, name).text);
        return 0;
      }
      case 'call': {
        const call = parseToolCall(name ?? '', json);
        if (!p.registry.get(call.name)) await discovered(p.integrations);
        const outcome = await p.gateway.call(call.name, call.input, cliCaller());
        if (!outcome.ok) {
          process.stderr.write(`${neutralizeControls(renderError(outcome.error))}\n`);
          return 1;
        }
        out(renderToolResult(outcome.result));
        return outcome.result.isError ? 1 : 0;
      }
      default:
        throw new UsageError(`unknown subcommand "${sub}"; use list, tools, call or logs.`);
    }
  });
}
