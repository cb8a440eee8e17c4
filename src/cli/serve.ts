import { isLoopbackHost } from '../config/load.js';
import { createPaddock, VERSION } from '../main.js';
import { McpHttpEndpoint } from '../mcp/http.js';
import { WebApp } from '../web/app.js';
import { loadOrCreateToken } from '../web/auth.js';
import { createDock, dockAgentsFromService, dockComputerFromManager } from '../web/dock/index.js';
import { createOAuth } from '../web/oauth/index.js';
import { newPreviewBasePath, previewRoutes } from '../web/preview-routes.js';
import { out, parseCommandArgs, UsageError } from './args.js';
import { CONFIG_OPTION, loadFor, loggerFor } from './context.js';

const HELP = `Usage: paddock serve [--host H] [--port N] [--config FILE]

Runs Paddock: the dock at http://127.0.0.1:7420/ and MCP (Streamable HTTP) at /mcp.
The server token is created in the data directory on first start and printed once;
clients send it as "Authorization: Bearer <token>". Stop with Ctrl-C.`;

export async function serveCommand(args: string[]): Promise<number> {
  const { values } = parseCommandArgs(
    'serve',
    args,
    {
      ...CONFIG_OPTION,
      host: { type: 'string' },
      port: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
    false,
  );
  if (values.help) {
    out(HELP);
    return 0;
  }
  const loaded = loadFor(values);
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
  const { token, created, file } = loadOrCreateToken(loaded.dataDir);
  const previewBase = newPreviewBasePath();
  const paddock = await createPaddock(loaded, {
    logger,
    preview: { basePath: previewBase, serverToken: token },
  });
  const preview = previewRoutes(previewBase, paddock.computer.preview);
  const dock = createDock({
    audit: paddock.audit,
    logger,
    version: VERSION,
    auth: server.auth,
    gateway: paddock.gateway,
    computer: dockComputerFromManager(paddock.computer, {
      logger,
      terminals: paddock.computer.terminals,
      preview: paddock.computer.preview,
    }),
    agents: dockAgentsFromService(paddock.agents),
    secureCookie: server.publicUrl?.startsWith('https://') ?? false,
  });
  const oauth =
    server.auth === 'token' && server.oauth.enabled
      ? createOAuth({
          db: paddock.db,
          logger,
          sessions: dock.login,
          ...(server.publicUrl === undefined ? {} : { publicUrl: server.publicUrl }),
          limits: {
            accessTokenTtlMs: server.oauth.accessTokenTtlSeconds * 1000,
            registrationsPerMinute: server.oauth.registrationsPerMinute,
          },
        })
      : undefined;
  const mcp = new McpHttpEndpoint(
    {
      gateway: paddock.gateway,
      registry: paddock.registry,
      version: VERSION,
      toolsets: loaded.config.mcp.toolsets,
    },
    logger,
    oauth ? { revokedGrants: (ids) => oauth.store.revokedAmong(ids) } : {},
  );
  oauth?.onRevoked((ids) => mcp.closeGrants(ids));
  const app = new WebApp({
    host,
    port,
    auth: server.auth,
    token,
    allowedHosts: server.allowedHosts,
    mcp,
    logger,
    routes: [preview.route, ...(oauth?.routes ?? []), ...dock.routes],
    upgrades: [preview.upgrade, ...dock.upgrades],
    sessions: dock.sessions,
    unauthorized: dock.unauthorized,
    ...(oauth ? { oauth } : {}),
  });
  let address: { port: number };
  try {
    address = await app.listen();
  } catch (e) {
    await dock.close();
    await paddock.close();
    throw new UsageError(`cannot listen on ${host}:${port} (${(e as Error).message}); pick another --port.`);
  }
  const shownHost = host.includes(':') ? `[${host}]` : host;
  const base = server.publicUrl ?? `http://${shownHost}:${address.port}`;
  paddock.computer.setDockUrl(base);
  out(`Paddock ${VERSION} is running.`);
  out(`  MCP endpoint: ${base}/mcp`);
  out(`  Dock:         ${base}/`);
  if (server.auth === 'token')
    out(`  Login link:   ${dock.loginLink(base)}   (opens the dock; single use, valid 10 minutes)`);
  if (server.auth === 'token') {
    if (created) out(`  Token:        ${token}   (new; stored in ${file}; shown once)`);
    else out(`  Token:        stored in ${file}`);
  } else out('  Auth:         none (loopback only)');
  logger.info('server.started', { url: base, dataDir: loaded.dataDir });
  paddock.agents.scheduler.start();
  await new Promise<void>((resolve) => {
    process.once('SIGINT', resolve);
    process.once('SIGTERM', resolve);
  });
  logger.info('server.stopping');
  paddock.agents.scheduler.stop();
  await dock.close();
  await app.close();
  await paddock.close();
  return 0;
}
