import { ConfigError } from '../config/load.js';
import { isPaddockError } from '../shared/errors.js';
import { agentsCommand } from './agents.js';
import { UsageError } from './args.js';
import { auditCommand } from './audit.js';
import { doctorCommand } from './doctor.js';
import { initCommand } from './init.js';
import { launchCommand } from './launch.js';
import { policyCommand } from './policy.js';
import { serveCommand } from './serve.js';
import { serversCommand } from './servers.js';
import { toolsCommand } from './tools.js';

/** One CLI command: gets its arguments, returns the exit code. */
export type Command = (args: string[]) => Promise<number>;

const COMMANDS: Record<string, { run: Command; summary: string }> = {
  serve: { run: serveCommand, summary: 'run the server: the dock and /mcp on localhost' },
  mcp: {
    run: async (args) => (await import('./mcp.js')).mcpCommand(args),
    summary: 'stdio MCP for Claude Desktop, Cursor, …: a bridge to the server (started on demand)',
  },
  status: {
    run: async (args) => (await import('./server-control.js')).statusCommand(args),
    summary: 'is the server running: where, its sessions and computers',
  },
  stop: {
    run: async (args) => (await import('./server-control.js')).stopCommand(args),
    summary: 'stop the server of the data directory',
  },
  open: {
    run: async (args) => (await import('./server-control.js')).openCommand(args),
    summary: 'open the dock of the running server (a new single-use login link)',
  },
  tools: { run: toolsCommand, summary: 'list tools, or call one through the gateway' },
  audit: { run: auditCommand, summary: 'read the audit log of tool calls' },
  policy: { run: policyCommand, summary: 'check an action against the whitelist policy' },
  agents: { run: agentsCommand, summary: 'agents of .paddock/agents: list, run, runs, show' },
  servers: { run: serversCommand, summary: 'upstream MCP servers: list, tools, call, logs' },
  launch: { run: launchCommand, summary: 'boot a computer from a launch link and run its startup script' },
  init: { run: initCommand, summary: 'write a starter paddock.yaml and the .paddock/ layout' },
  doctor: { run: doctorCommand, summary: 'check this machine and the configuration' },
};

export function usage(): string {
  const width = Math.max(...Object.keys(COMMANDS).map((c) => c.length));
  return [
    'Usage: paddock <command> [options]   (global: --config FILE; env PADDOCK_CONFIG, PADDOCK_DATA)',
    '',
    'Commands:',
    ...Object.entries(COMMANDS).map(([name, c]) => `  ${name.padEnd(width)}  ${c.summary}`),
    '',
    'Run `paddock <command> --help` for the options of a command.',
  ].join('\n');
}

/** Runs the CLI; returns the process exit code (2 for configuration and usage errors). */
export async function main(argv: string[]): Promise<number> {
  const [name, ...rest] = argv;
  if (!name || name === '--help' || name === '-h' || name === 'help') {
    process.stdout.write(`${usage()}\n`);
    return name ? 0 : 2;
  }
  if (name === '--version' || name === '-v') {
    const { VERSION } = await import('../main.js');
    process.stdout.write(`${VERSION}\n`);
    return 0;
  }
  const command = COMMANDS[name];
  if (!command) {
    process.stderr.write(`paddock: unknown command "${name}".\n\n${usage()}\n`);
    return 2;
  }
  try {
    return await command.run(rest);
  } catch (e) {
    if (e instanceof ConfigError) {
      process.stderr.write(`paddock: ${e.message}\n`);
      return 2;
    }
    if (e instanceof UsageError) {
      process.stderr.write(`paddock ${name}: ${e.message}\n`);
      return 2;
    }
    if (isPaddockError(e)) {
      process.stderr.write(`paddock ${name}: ${e.code}: ${e.message}\n`);
      return 1;
    }
    process.stderr.write(`paddock ${name}: unexpected error: ${(e as Error)?.stack ?? String(e)}\n`);
    return 1;
  }
}
