import { UsageError } from './args.js';

/** One CLI command: gets its arguments, returns the exit code. */
export type Command = (args: string[]) => Promise<number>;

/**
 * Each command's module is imported only when that command runs, so `--help` or `policy check`
 * never load the server, the MCP SDK or the computer.
 */
const COMMANDS: Record<string, { load: () => Promise<Command>; summary: string }> = {
  serve: {
    load: async () => (await import('./serve.js')).serveCommand,
    summary: 'run the server: the dock and /mcp on localhost',
  },
  mcp: {
    load: async () => (await import('./mcp.js')).mcpMain,
    summary: 'stdio MCP for Claude Desktop, Cursor, …: a bridge to the server (started on demand)',
  },
  status: {
    load: async () => (await import('./server-control.js')).statusCommand,
    summary: 'is the server running: where, its sessions and computers',
  },
  stop: {
    load: async () => (await import('./server-control.js')).stopCommand,
    summary: 'stop the server of the data directory',
  },
  open: {
    load: async () => (await import('./server-control.js')).openCommand,
    summary: 'open the dock of the running server (a new single-use login link)',
  },
  tools: {
    load: async () => (await import('./tools.js')).toolsCommand,
    summary: 'list tools, or call one through the gateway',
  },
  audit: {
    load: async () => (await import('./audit.js')).auditCommand,
    summary: 'read the audit log of tool calls',
  },
  computers: {
    load: async () => (await import('./computers.js')).computersCommand,
    summary: 'computers of the server: list (with disk use), stop, rm',
  },
  images: {
    load: async () => (await import('./images.js')).imagesCommand,
    summary: 'images profiles boot from: list, build PROFILE, import FILE, pull REF, rm, prune',
  },
  approvals: {
    load: async () => (await import('./approvals.js')).approvalsCommand,
    summary: 'calls of ask tools waiting for a person: list, show, approve, deny, rules',
  },
  policy: {
    load: async () => (await import('./policy.js')).policyCommand,
    summary: 'check an action against the whitelist policy',
  },
  agents: {
    load: async () => (await import('./agents.js')).agentsCommand,
    summary: 'agents of .paddock/agents: list, run, runs, show',
  },
  clients: {
    load: async () => (await import('./clients.js')).clientsCommand,
    summary: 'MCP clients signed in with OAuth: list, revoke',
  },
  servers: {
    load: async () => (await import('./servers.js')).serversCommand,
    summary: 'upstream MCP servers: list, tools, call, logs',
  },
  launch: {
    load: async () => (await import('./launch.js')).launchCommand,
    summary: 'boot a computer from a launch link and run its startup script',
  },
  init: {
    load: async () => (await import('./init.js')).initCommand,
    summary: 'write a starter paddock.yaml and the .paddock/ layout',
  },
  doctor: {
    load: async () => (await import('./doctor.js')).doctorCommand,
    summary: 'check this machine and the configuration',
  },
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
    const { VERSION } = await import('../main/common.js');
    process.stdout.write(`${VERSION}\n`);
    return 0;
  }
  const command = COMMANDS[name];
  if (!command) {
    process.stderr.write(`paddock: unknown command "${name}".\n\n${usage()}\n`);
    return 2;
  }
  try {
    return await (await command.load())(rest);
  } catch (e) {
    const [{ ConfigError }, { isPaddockError }, { neutralizeControls }] = await Promise.all([
      import('../config/config-error.js'),
      import('../shared/errors.js'),
      import('../shared/terminal-text.js'),
    ]);
    if (e instanceof ConfigError) {
      process.stderr.write(`paddock: ${neutralizeControls(e.message)}\n`);
      return 2;
    }
    if (e instanceof UsageError) {
      process.stderr.write(`paddock ${name}: ${neutralizeControls(e.message)}\n`);
      return 2;
    }
    if (isPaddockError(e)) {
      process.stderr.write(`paddock ${name}: ${e.code}: ${neutralizeControls(e.message)}\n`);
      // a store that cannot be used at start (unreachable, refused, newer schema) is a setup problem
      return e.details.startup === true ? 2 : 1;
    }
    process.stderr.write(`paddock ${name}: unexpected error: ${(e as Error)?.stack ?? String(e)}\n`);
    return 1;
  }
}
