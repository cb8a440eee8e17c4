import { BridgeError, runBridge } from '../mcp/bridge.js';
import { out, parseCommandArgs, UsageError } from './args.js';

const HELP = `Usage: paddock mcp [--computer NAME] [--toolsets computer,builtin,integrations,<server>] [--config FILE]

The stdio MCP server for desktop clients (Claude Desktop, Cursor, Claude Code): a bridge to
the one Paddock server of the data directory, started in the background when none runs
(its log: <data dir>/logs/serve.log). Each bridge is one session of that server, with a
computer of its own; --computer NAME attaches to a named computer that sessions naming it
share. stdout carries the protocol; messages go to stderr. Ending the bridge ends its
session, never the server (\`paddock stop\` does).`;

/** `paddock mcp`: loads only what the bridge needs (no SDK, no config schemas). */
export async function mcpCommand(args: string[]): Promise<number> {
  const { values } = parseCommandArgs(
    'mcp',
    args,
    {
      config: { type: 'string' },
      computer: { type: 'string' },
      toolsets: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
    false,
  );
  if (values.help) {
    out(HELP);
    return 0;
  }
  try {
    return await runBridge({
      ...(typeof values.config === 'string' ? { configPath: values.config } : {}),
      ...(typeof values.computer === 'string' ? { computer: values.computer } : {}),
      ...(typeof values.toolsets === 'string'
        ? {
            toolsets: values.toolsets
              .split(',')
              .map((s) => s.trim())
              .filter(Boolean),
          }
        : {}),
    });
  } catch (e) {
    if (!(e instanceof BridgeError)) throw e;
    process.stderr.write(`paddock mcp: ${e.message}\n`);
    return e.exitCode;
  }
}

/**
 * The bridge's entry: desktop clients start a bridge for every session and show its stderr, so
 * every failure is one line (never a stack) with its exit code.
 */
export async function mcpMain(args: string[]): Promise<number> {
  try {
    return await mcpCommand(args);
  } catch (e) {
    // a client shows this line to its user: the message, never a stack
    process.stderr.write(`paddock mcp: ${(e as Error)?.message ?? String(e)}\n`);
    return e instanceof UsageError ? 2 : 1;
  }
}
