import { answerApprovalRequest } from '../approvals/requests.js';
import { answerComputersRequest } from '../computer/admin.js';
import { DEFAULT_PREVIEW_PORT } from '../computer/preview/preview-service.js';
import type { ComputerService } from '../computer/service.js';
import type { LoadedConfig } from '../config/load.js';
import { fileAppView } from '../mcp/app/resource.js';
import { BackgroundCalls } from '../mcp/background-calls.js';
import { dockToolsFromGateway } from '../mcp/dock-tools.js';
import { McpHttpEndpoint } from '../mcp/http.js';
import { AlreadyRunningError, ensureRunDir, instancePaths, readServerInfo } from '../mcp/instance.js';
import { acquireLock } from '../mcp/instance-lock.js';
import { ModernServing } from '../mcp/modern-call.js';
import { type EndedSession, McpSessions } from '../mcp/sessions.js';
import { McpSocketServer } from '../mcp/socket.js';
import type { CliRunner } from '../mcp/socket-ops.js';
import { PaddockError } from '../shared/errors.js';
import type { Logger } from '../shared/logger.js';
import { DEFAULT_SLOW_READER_LIMITS } from '../shared/slow-reader.js';
import { policyVerdict } from '../tools/policy-preview.js';
import { WebApp } from '../web/app.js';
import { loadOrCreateToken } from '../web/auth.js';
import { ClientNames } from '../web/dock/client-names.js';
import {
  createDock,
  DOCK_CALLER,
  dockAgentsFromService,
  dockApprovalsFromService,
  dockComputerFromService,
} from '../web/dock/index.js';
import { dockToolReviewFromService } from '../web/dock/trust.js';
import { listenOrFallBack } from '../web/listen.js';
import { createOAuth } from '../web/oauth/index.js';
import { type PreviewPorts, PreviewRelay } from '../web/preview/relay.js';
import { newPreviewBasePath, previewRoutes } from '../web/preview/routes.js';

import { type Closer, closeInReverse, VERSION } from './common.js';
import { ConfigReloader } from './config-reload.js';
import { exitWhenIdle } from './idle-exit.js';
import { createPaddock, type Paddock } from './paddock.js';
import { endClient, revokeClient } from './revocation.js';
import { startHeadSigner } from './signing.js';

/** How `paddock serve` listens. */
export interface ServerOptions {
  logger: Logger;
  host: string;
  port: number;
  /**
   * Started by a bridge: waits briefly for a server that is stopping to let go of the lock, and
   * listens on a free port when the configured one is taken.
   */
  background?: boolean;
  /** Runs the acting CLI commands that arrive over the socket (`paddock tools call`, …) on the server's services. */
  cli?: (paddock: Paddock) => CliRunner;
}

/** A listening server: the one process of its data directory. */
export interface RunningServer {
  paddock: Paddock;
  /** Base URL of the dock and `/mcp`. */
  url: string;
  /** The server token and whether it was just created. */
  token: { token: string; created: boolean; file: string };
  /** A fresh single-use login link to the dock (the base URL when auth is `none`). */
  loginLink(): string;
  /** Resolves when a client asked the server to stop over the socket. */
  stopRequested: Promise<void>;
  close(): Promise<void>;
}

/**
 * Wires and starts `paddock serve`, the one server of a data directory: takes the serve lock
 * (refusing when another server holds it), builds the services, then listens on HTTP (the dock,
 * `/mcp`) and on the unix socket of the run directory (the stdio bridge and the CLI).
 */
export async function startServer(loaded: LoadedConfig, options: ServerOptions): Promise<RunningServer> {
  const { logger } = options;
  const server = loaded.config.server;
  const paths = instancePaths(loaded.dataDir);
  ensureRunDir(paths);
  const lock = acquireLock(paths.serveLock, options.background ? 10_000 : 0);
  if (!lock) throw new AlreadyRunningError(loaded.dataDir, readServerInfo(paths));
  const closers: Closer[] = [() => lock.release()];
  const closeAll = () => closeInReverse(closers, logger);
  try {
    const token = loadOrCreateToken(loaded.dataDir);
    const previewBase = newPreviewBasePath();
    const paddock = await createPaddock(loaded, {
      logger,
      preview: { basePath: previewBase },
    });
    closers.push(() => paddock.close());
    const reloader = loaded.file
      ? new ConfigReloader({
          file: loaded.file,
          current: loaded.config,
          logger: logger.child({ domain: 'config' }),
          apply: (next) => paddock.applyPolicy(next),
        })
      : null;
    reloader?.start();
    closers.push(() => reloader?.close());
    const sessions = new McpSessions((ended) => {
      paddock.approvals.endSession(ended.caller);
      releaseSessionComputer(paddock, ended);
    });
    const background = new BackgroundCalls(paddock.gateway);
    closers.push(() => background.close());
    const mcpDeps = {
      gateway: paddock.gateway,
      registry: paddock.registry,
      version: VERSION,
      toolsets: loaded.config.mcp.toolsets,
      modern: new ModernServing(paddock.gateway, background),
      appView: fileAppView(),
    };
    const preview = previewRoutes(
      previewBase,
      new PreviewRelay(watchedPreview(paddock.computer), { basePath: previewBase, serverToken: token.token }),
    );
    const dockComputer = dockComputerFromService(paddock.computer, {
      logger,
      sessions: () => sessions.countByComputer((ref) => paddock.computer.keyOfRef(ref)),
      names: new ClientNames(() => sessions.list()),
    });
    closers.push(() => dockComputer.close());
    const dock = createDock({
      audit: paddock.audit,
      logger,
      version: VERSION,
      auth: server.auth,
      gateway: paddock.gateway,
      tools: dockToolsFromGateway(paddock.gateway, DOCK_CALLER, () => dockComputer.target()),
      computer: dockComputer,
      agents: dockAgentsFromService(paddock.agents),
      approvals: dockApprovalsFromService(paddock.approvals, {
        callerLabel: (caller) => dockComputer.callerLabel?.(caller) ?? caller,
        verdict: (tool, args) => {
          const t = paddock.registry.get(tool);
          return t ? policyVerdict(t, args, paddock.policy) : null;
        },
      }),
      toolReview: dockToolReviewFromService(paddock.integrations),
      readOnlyTool: (tool) => paddock.registry.get(tool)?.annotations.readOnlyHint === true,
      browser: paddock.browser,
      secureCookie: server.publicUrl?.startsWith('https://') ?? false,
    });
    closers.push(() => dock.close());
    const oauth =
      server.auth === 'token' && server.oauth.enabled
        ? createOAuth({
            store: paddock.stores.oauth,
            logger,
            sessions: dock.login,
            ...(server.publicUrl === undefined ? {} : { publicUrl: server.publicUrl }),
            limits: {
              accessTokenTtlMs: server.oauth.accessTokenTtlSeconds * 1000,
              registrationsPerMinute: server.oauth.registrationsPerMinute,
            },
          })
        : undefined;
    const slowReader = { ...DEFAULT_SLOW_READER_LIMITS, stallMs: server.stalledPeerSeconds * 1000 };
    const principals = loaded.config.principals;
    const mcp: McpHttpEndpoint = new McpHttpEndpoint(mcpDeps, logger, {
      sessions,
      slowReader,
      quotas: { perClient: principals.clients.maxSessions, ownerReserve: principals.ownerReserve.sessions },
      ...(oauth
        ? {
            revokedGrants: (ids: string[]) => oauth.store.revokedAmong(ids),
            // revoked by another process sharing the store: end the rest of the client here
            onClientsRevoked: (clients: string[]) => {
              for (const client of clients)
                void endClient(paddock, mcp, client, [], 'store').catch((e: unknown) =>
                  logger.error('oauth.end_failed', { client, error: (e as Error).message }),
                );
            },
          }
        : {}),
    });
    oauth?.onRevoked(async (clientId, ids) => {
      await endClient(paddock, mcp, clientId, ids, 'dock:owner');
    });
    const app = new WebApp({
      host: options.host,
      port: options.port,
      auth: server.auth,
      token: token.token,
      allowedHosts: server.allowedHosts,
      mcp,
      logger,
      routes: [preview.route, ...(oauth?.routes ?? []), ...dock.routes],
      upgrades: [preview.upgrade, ...dock.upgrades],
      sessions: dock.sessions,
      unauthorized: dock.unauthorized,
      ...(oauth ? { oauth } : {}),
    });
    const address = await listenOrFallBack(app, { ...options, fallback: options.background === true });
    closers.push(() => app.close());
    const shownHost = options.host.includes(':') ? `[${options.host}]` : options.host;
    const url = server.publicUrl ?? `http://${shownHost}:${address.port}`;
    paddock.setDockUrl(url);

    let requestStop = () => {};
    const stopRequested = new Promise<void>((resolve) => {
      requestStop = resolve;
    });
    const identity = { file: loaded.file ?? null, projectDir: loaded.projectDir };
    const socket = new McpSocketServer({
      paths,
      identity,
      mcp: mcpDeps,
      sessions,
      logger,
      slowReader,
      control: {
        status: () => ({
          pid: process.pid,
          version: VERSION,
          url,
          dataDir: loaded.dataDir,
          config: identity,
          sessions: sessions.list(),
          computers: paddock.computer.list(),
        }),
        openLink: () => dock.loginLink(url),
        stop: () => requestStop(),
        approvals: (request) => answerApprovalRequest(paddock.approvals, request, 'cli'),
        computers: (request) =>
          answerComputersRequest(paddock.computer, loaded.dataDir, request, paddock.gateway),
        clients: (request) => answerClientsRequest(paddock, mcp, request),
        ...(options.cli ? { cli: options.cli(paddock) } : {}),
      },
    });
    const { replacedStale } = await socket.listen({ version: VERSION, url });
    closers.push(() => socket.close());
    const idleExit = loaded.config.mcp.idleExitSeconds;
    if (options.background && idleExit > 0) {
      const use = {
        sessions: () => sessions.size,
        pages: () => dock.hub.size,
        activeComputers: () =>
          paddock.computer.list().filter((c) => c.lifecycle === 'running' || c.lifecycle === 'booting')
            .length,
      };
      const end = exitWhenIdle(use, idleExit * 1000, () => {
        logger.info('server.idle_exit', { idleSeconds: idleExit });
        requestStop();
      });
      closers.push(end);
    }
    paddock.agents.scheduler.start();
    closers.push(() => paddock.agents.scheduler.stop());
    const signer = startHeadSigner(paddock);
    if (signer) closers.push(() => signer.stop());
    logger.info('server.started', { url, dataDir: loaded.dataDir, socket: paths.socket, replacedStale });
    return {
      paddock,
      url,
      token,
      loginLink: () => dock.loginLink(url),
      stopRequested,
      close: closeAll,
    };
  } catch (e) {
    await closeAll();
    throw e;
  }
}

/**
 * The end of an MCP session: its private computer is released after computer.sessionGraceMs (a
 * named computer stays for the other sessions naming it).
 */
function releaseSessionComputer(paddock: Paddock, ended: EndedSession): void {
  paddock.logger.debug('mcp.session_released', { caller: ended.caller, computer: ended.computer });
  if (ended.computer.kind === 'private') paddock.computer.releaseOwner(ended.computer.owner);
}

/** The preview relay's ports: those of the computer the dock watches. */
function watchedPreview(computers: ComputerService): PreviewPorts {
  return {
    port: () => computers.watched()?.preview.port() ?? DEFAULT_PREVIEW_PORT,
    openPort: async (port) => {
      const watched = computers.watched();
      if (!watched) throw new PaddockError('NOT_RUNNING', 'No computer is running; launch one first.');
      return watched.preview.openPort(port);
    },
  };
}

/** Answers `paddock clients revoke` over the socket: the server revokes and ends everything of the client. */
async function answerClientsRequest(
  paddock: Paddock,
  mcp: McpHttpEndpoint,
  request: Record<string, unknown>,
): Promise<Record<string, unknown>> {
  const id = request.id;
  if (request.action !== 'revoke' || typeof id !== 'string' || id === '')
    throw new PaddockError(
      'INVALID_ARGUMENT',
      'Say which client to revoke, e.g. `paddock clients revoke cl_…`.',
    );
  return { ended: await revokeClient(paddock, mcp, id, 'cli') };
}
