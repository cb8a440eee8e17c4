import { StdioServerTransport } from '@modelcontextprotocol/server/stdio';
import { createPaddock, VERSION } from '../main.js';
import { createMcpServer } from '../mcp/server.js';
import { randomId } from '../shared/ids.js';
import { out, parseCommandArgs } from './args.js';
import { CONFIG_OPTION, loadFor, loggerFor } from './context.js';

const HELP = `Usage: paddock mcp [--toolsets computer,builtin,integrations,<server>]

Serves MCP over stdio. stdout carries the protocol; logs go to stderr.`;

export async function mcpCommand(args: string[]): Promise<number> {
  const { values } = parseCommandArgs(
    'mcp',
    args,
    { ...CONFIG_OPTION, toolsets: { type: 'string' }, help: { type: 'boolean', short: 'h' } },
    false,
  );
  if (values.help) {
    out(HELP);
    return 0;
  }
  const loaded = loadFor(values);
  const logger = loggerFor(loaded);
  const paddock = await createPaddock(loaded, { logger });
  const toolsets =
    typeof values.toolsets === 'string'
      ? values.toolsets
          .split(',')
          .map((s) => s.trim())
          .filter(Boolean)
      : loaded.config.mcp.toolsets;
  const session = randomId('', 6);
  const { server, dispose } = createMcpServer(
    { gateway: paddock.gateway, registry: paddock.registry, version: VERSION, toolsets },
    () => ({ caller: `mcp:stdio-${session}`, via: 'direct', attended: true }),
  );
  const transport = new StdioServerTransport();
  const closed = new Promise<void>((resolve) => {
    transport.onclose = () => resolve();
  });
  await server.connect(transport);
  logger.info('mcp.session_opened', { session, transport: 'stdio' });
  const stop = new Promise<void>((resolve) => {
    process.once('SIGINT', resolve);
    process.once('SIGTERM', resolve);
  });
  await Promise.race([closed, stop]);
  dispose();
  await server.close().catch(() => {});
  await paddock.close();
  return 0;
}
