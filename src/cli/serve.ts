import { isLoopbackHost } from '../config/load.js';
import { startServer, VERSION } from '../main.js';
import { runActRequest } from './acts.js';
import { CONFIG_OPTION, out, parseCommandArgs, UsageError } from './args.js';
import { loadFor, loggerFor } from './context.js';

const HELP = `Usage: paddock serve [--host H] [--port N] [--config FILE]

Runs Paddock, the one server of its data directory: the dock at http://127.0.0.1:7420/,
MCP (Streamable HTTP) at /mcp, and a unix socket in <data dir>/run/ where \`paddock mcp\`
(the stdio bridge for desktop clients) and \`paddock status | stop | open\` reach it.
A second server for the same data directory refuses to start.
The server token is created in the data directory on first start and printed once;
clients send it as "Authorization: Bearer <token>". Stop with Ctrl-C or \`paddock stop\`.

  --background   as started by \`paddock mcp\`: wait briefly for a stopping server, and take a
                 free port when the configured one is busy`;

export async function serveCommand(args: string[]): Promise<number> {
  const { values } = parseCommandArgs(
    'serve',
    args,
    {
      ...CONFIG_OPTION,
      host: { type: 'string' },
      port: { type: 'string' },
      background: { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
    false,
  );
  if (values.help) {
    out(HELP);
    return 0;
  }
  const loaded = await loadFor(values);
  const server = loaded.config.server;
  const host = typeof values.host === 'string' ? values.host : server.host;
  const port = typeof values.port === 'string' ? Number(values.port) : server.port;
  if (!Number.isInteger(port) || port < 0 || port > 65535)
    throw new UsageError('--port must be an integer from 0 to 65535.');
  if (server.auth === 'none' && !isLoopbackHost(host)) {
    throw new UsageError(
      `auth "none" only serves a loopback address, and --host is "${host}"; remove --host or set server.auth to token.`,
    );
  }
  const logger = loggerFor(loaded);
  const running = await startServer(loaded, {
    logger,
    host,
    port,
    background: values.background === true,
    cli: (paddock) => (request, io, signal) => runActRequest(paddock, request, io, signal),
  });
  const { url, token } = running;
  out(`Paddock ${VERSION} is running (pid ${process.pid}, data ${loaded.dataDir}).`);
  out(`  MCP endpoint: ${url}/mcp`);
  out(`  Dock:         ${url}/`);
  if (server.auth === 'token')
    out(`  Login link:   ${running.loginLink()}   (opens the dock; single use, valid 10 minutes)`);
  if (server.auth === 'token') {
    if (token.created) out(`  Token:        ${token.token}   (new; stored in ${token.file}; shown once)`);
    else out(`  Token:        stored in ${token.file}`);
  } else out('  Auth:         none (loopback only)');
  out('  Clients:      `paddock mcp` (stdio), `paddock open` (a new login link), `paddock stop`');
  await Promise.race([
    running.stopRequested,
    new Promise<void>((resolve) => {
      process.once('SIGINT', resolve);
      process.once('SIGTERM', resolve);
    }),
  ]);
  logger.info('server.stopping');
  await running.close();
  return 0;
}
