import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type Database from 'better-sqlite3';
import { AgentRunStore, type AgentsService, createAgentNamespaceOf, createAgents } from './agents/index.js';
import { answerApprovalRequest } from './approvals/requests.js';
import { ApprovalService } from './approvals/service.js';
import { SqliteApprovalStore } from './approvals/store.js';
import { openDatabase } from './audit/database.js';
import { SqliteAuditStore } from './audit/sqlite-audit-store.js';
import { SqliteMemoryStore } from './audit/sqlite-memory-store.js';
import type { AuditStore, MemoryStore } from './audit/types.js';
import { ChannelSession } from './channel/session.js';
import { answerComputersRequest } from './computer/admin.js';
import { BwrapBackend } from './computer/backend/bwrap.js';
import { withPidFiles } from './computer/backend/sandbox-pids.js';
import type { ComputerBackend } from './computer/backend/types.js';
import { EgressService } from './computer/egress.js';
import { DEFAULT_PREVIEW_PORT } from './computer/preview/preview-service.js';
import { ComputerService } from './computer/service.js';
import { createComputerBuiltins } from './computer/tools/computer-builtins.js';
import { createComputerTools } from './computer/tools/index.js';
import { ConfigError, type LoadedConfig } from './config/load.js';
import { loadMcpServers } from './integrations/load-config.js';
import { loadPlugins } from './integrations/plugins.js';
import { IntegrationsService } from './integrations/service.js';
import { dockToolsFromGateway } from './mcp/dock-tools.js';
import { McpHttpEndpoint } from './mcp/http.js';
import { AlreadyRunningError, ensureRunDir, instancePaths, readServerInfo } from './mcp/instance.js';
import { acquireLock } from './mcp/instance-lock.js';
import { type EndedSession, McpSessions } from './mcp/sessions.js';
import { McpSocketServer } from './mcp/socket.js';
import type { CliRunner } from './mcp/socket-ops.js';
import { compileInjectRules } from './net/egress/inject.js';
import { loadTerminatingCa } from './net/egress/tls-ca.js';
import { DEFAULT_EGRESS_LIMITS } from './net/egress/types.js';
import { compilePolicy } from './policy/compile.js';
import { createSystemHostResolver } from './policy/index.js';
import type { Sandbox } from './policy/types.js';
import { isPaddockError, PaddockError } from './shared/errors.js';
import type { Logger } from './shared/logger.js';
import { DEFAULT_SLOW_READER_LIMITS } from './shared/slow-reader.js';
import { createBuiltinServices, createBuiltinTools } from './tools/builtin/index.js';
import { Gateway } from './tools/gateway.js';
import { PermissionPolicy, type PermissionRule } from './tools/permissions.js';
import { ToolRegistry } from './tools/registry.js';
import type { Tool } from './tools/tool.js';
import { InputValidator } from './tools/validation.js';
import { WebApp } from './web/app.js';
import { loadOrCreateToken } from './web/auth.js';
import {
  createDock,
  DOCK_CALLER,
  dockAgentsFromService,
  dockApprovalsFromService,
  dockComputerFromService,
} from './web/dock/index.js';
import { listenOrFallBack } from './web/listen.js';
import { createOAuth } from './web/oauth/index.js';
import { type PreviewPorts, PreviewRelay } from './web/preview/relay.js';
import { newPreviewBasePath, previewRoutes } from './web/preview/routes.js';

export { compilePolicy } from './policy/compile.js';

type Closer = () => Promise<void> | void;

/** Runs closers last-first; one that fails is logged and the others still run. */
async function closeInReverse(closers: Closer[], logger: Logger): Promise<void> {
  for (const close of closers.splice(0).reverse()) {
    try {
      await close();
    } catch (e) {
      logger.warn('paddock.close_failed', { error: (e as Error).message });
    }
  }
}

/** The bwrap backend; without cgroups, its sandboxes are tracked by pid file for the next start's sweep. */
function sandboxBackend(sandboxUid: number, dataDir: string, logger: Logger): ComputerBackend {
  const bwrap = new BwrapBackend({ logger, sandboxUid });
  return bwrap.cgroupSupport ? bwrap : withPidFiles(bwrap, join(dataDir, 'run', 'sandboxes'), logger);
}

/**
 * The egress proxy of computers: the same policy as http_get, the inject rules and, when there
 * are any, the data directory's CA. A bad inject rule or profile network.allow is a config error.
 */
export function createEgress(
  loaded: LoadedConfig,
  policy: Sandbox,
  audit: AuditStore,
  env: NodeJS.ProcessEnv,
) {
  const { config } = loaded;
  try {
    for (const profile of config.computer.profiles) EgressService.checkProfile(profile);
    const inject = compileInjectRules(config.policy.http.inject);
    return new EgressService({
      policy,
      dns: createSystemHostResolver(),
      audit,
      limits: DEFAULT_EGRESS_LIMITS,
      env,
      ...(inject.size > 0 ? { inject, ca: loadTerminatingCa(join(loaded.dataDir, 'egress-ca')) } : {}),
    });
  } catch (e) {
    if (isPaddockError(e) && e.code === 'INVALID_ARGUMENT') {
      throw new ConfigError(loaded.file ?? '(defaults)', [e.message]);
    }
    throw e;
  }
}

/** Where the skills of `.paddock/skills` appear (read-only) in every computer. */
const SKILLS_GUEST_ROOT = '/skills';

/** Paddock's version, from package.json. */
export const VERSION = '0.1.0';

/** The wired services of one Paddock process. */
export interface Paddock {
  loaded: LoadedConfig;
  logger: Logger;
  db: Database.Database;
  audit: AuditStore;
  memory: MemoryStore;
  policy: Sandbox;
  registry: ToolRegistry;
  permissions: PermissionPolicy;
  validator: InputValidator;
  gateway: Gateway;
  approvals: ApprovalService;
  integrations: IntegrationsService;
  computer: ComputerService;
  agents: AgentsService;
  /** Tells the services where the dock listens (links in launch answers and approval requests). */
  setDockUrl(url: string): void;
  close(): Promise<void>;
}

export interface CreateOptions {
  logger: Logger;
  /** Base URL of the dock (what launch_computer answers); `serve` sets the real one once listening. */
  dockUrl?: string;
  /** Where `serve` mounts the preview (the dock's preview pane URLs start with it). */
  preview?: { basePath: string };
  /** Environment for `${VAR}` in mcp_servers.yaml and provider keys; the process's by default. */
  env?: NodeJS.ProcessEnv;
}

/**
 * The composition root: config → services → tools. No other module wires services;
 * everything else receives what it needs from here.
 */
export async function createPaddock(loaded: LoadedConfig, options: CreateOptions): Promise<Paddock> {
  const { config, dataDir } = loaded;
  const logger = options.logger;
  const env = options.env ?? process.env;
  const db = openDatabase(join(dataDir, 'paddock.db'));
  const closers: Closer[] = [
    () => {
      db.close();
    },
  ];
  try {
    const audit = new SqliteAuditStore(db);
    const interrupted = audit.reconcile();
    if (interrupted > 0) logger.warn('audit.interrupted', { calls: interrupted });
    const memory = new SqliteMemoryStore(db);
    const policy = compilePolicy(loaded);
    const validator = new InputValidator();
    const registry = new ToolRegistry(validator);
    const servers = loadMcpServers(join(loaded.projectDir, '.paddock'), env);
    for (const warning of servers.warnings) logger.warn('integrations.config_warning', { warning });
    const pluginDir = join(loaded.projectDir, '.paddock', 'plugins');
    const plugins = await loadPlugins(
      [
        ...(existsSync(pluginDir) ? [pluginDir] : []),
        ...config.plugins.map((p) => resolve(loaded.projectDir, p)),
      ],
      logger,
    );
    const integrations = new IntegrationsService({
      servers: servers.servers,
      plugins,
      logger,
      toolCacheFile: join(dataDir, 'mcp-tools.json'),
    });
    closers.push(() => integrations.close());
    // upstream rules first: paddock.yaml is declared later and wins ties
    const rules: PermissionRule[] = [
      ...integrations.permissionRules(),
      ...Object.entries(config.permissions).map(([pattern, permission]) => ({
        pattern,
        permission,
        origin: loaded.file ?? 'defaults',
      })),
    ];
    const permissions = new PermissionPolicy(rules);
    let dockBase = options.dockUrl ?? config.server.publicUrl;
    const approvals = new ApprovalService({
      store: new SqliteApprovalStore(db),
      logger: logger.child({ domain: 'approvals' }),
      mcp: config.approvals.mcp,
      timeoutMs: config.approvals.timeoutSeconds * 1000,
      maxPendingPerCaller: config.approvals.maxPendingPerCaller,
      describe: (name) => registry.get(name)?.description,
      link: (id) => (dockBase ? `${dockBase.replace(/\/+$/, '')}/#approvals/${id}` : undefined),
    });
    closers.push(() => approvals.close());
    const gateway = new Gateway({
      approvals,
      registry,
      audit,
      policy,
      permissions,
      validator,
      logger,
      // the first listing waits as long as the slowest configured server may take to start
      firstListingWaitMs:
        Math.max(0, ...servers.servers.filter((s) => s.enabled).map((s) => s.timeoutMs)) + 1000,
      late: {
        settled: () => integrations.discovered(),
        discover: (name, deadline) => integrations.discover(name, deadline),
      },
    });

    const skillsDir = join(loaded.projectDir, '.paddock', 'skills');
    const computer = new ComputerService({
      backend: sandboxBackend(config.computer.sandboxUid, dataDir, logger),
      config: config.computer,
      dataDir,
      dockUrl:
        options.dockUrl ?? config.server.publicUrl ?? `http://${config.server.host}:${config.server.port}`,
      logger,
      db,
      egress: createEgress(loaded, policy, audit, env),
      ...(options.preview ? { preview: options.preview } : {}),
      sharedMounts: existsSync(skillsDir)
        ? [{ source: skillsDir, target: SKILLS_GUEST_ROOT, readOnly: true }]
        : [],
      // a command's tool channel acts for the caller that started it (never nested)
      toolChannels: (grant) =>
        grant.caller.via === 'channel'
          ? null
          : new ChannelSession(gateway, grant, logger.child({ domain: 'channel' })),
    });
    closers.push(() => computer.close());
    // memories of an agent's runs (and of their commands' tool calls) live under agent:<name>
    const runs = new AgentRunStore(db, audit);
    const namespaceOf = createAgentNamespaceOf(runs);
    const { http, notifier } = createBuiltinServices({ memory, notify: config.notify, logger });
    registry.register(
      createBuiltinTools({ memory, notify: config.notify, logger, notifier, httpClient: http, namespaceOf }),
    );
    registry.register(createComputerTools(computer));
    registry.register(createComputerBuiltins(computer));
    const syncSources = (tools: readonly Tool[], sources: Iterable<string>) => {
      for (const source of sources) {
        try {
          registry.replaceSource(
            source,
            tools.filter((t) => t.source === source),
          );
        } catch (e) {
          // a name taken by another source, or an input schema that does not compile
          logger.error('integrations.collision', { source, error: (e as Error).message });
        }
      }
    };
    integrations.onToolsChanged(({ tools, changedSources }) => syncSources(tools, changedSources));
    await integrations.start();
    const initial = integrations.tools();
    syncSources(initial, new Set(initial.map((t) => t.source)));
    const agents = createAgents({
      projectDir: loaded.projectDir,
      dataDir,
      gateway,
      registry,
      integrations,
      notifier,
      policy,
      policyConfig: config.policy,
      db,
      audit,
      logger,
      env,
      config: config.agents,
      store: runs,
      approvalLink: (id) => approvals.link(id),
      ...(existsSync(skillsDir) ? { skillsGuestRoot: SKILLS_GUEST_ROOT } : {}),
    });
    closers.push(() => agents.close());
    // a finished run's private computer goes after the grace period (a named one stays)
    const runsEnd = agents.onRunEvent((event) => {
      if (event.type === 'run.finished') computer.releaseOwner(`agent:${event.run.id}`);
    });
    closers.push(() => runsEnd.dispose());

    return {
      loaded,
      logger,
      db,
      audit,
      memory,
      policy,
      registry,
      permissions,
      validator,
      gateway,
      approvals,
      integrations,
      computer,
      agents,
      setDockUrl: (url) => {
        dockBase = url;
        computer.setDockUrl(url);
      },
      close: () => closeInReverse(closers, logger),
    };
  } catch (e) {
    await closeInReverse(closers, logger);
    throw e;
  }
}

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
    const sessions = new McpSessions((ended) => {
      paddock.approvals.endSession(ended.caller);
      releaseSessionComputer(paddock, ended);
    });
    const mcpDeps = {
      gateway: paddock.gateway,
      registry: paddock.registry,
      version: VERSION,
      toolsets: loaded.config.mcp.toolsets,
    };
    const preview = previewRoutes(
      previewBase,
      new PreviewRelay(watchedPreview(paddock.computer), { basePath: previewBase, serverToken: token.token }),
    );
    const dockComputer = dockComputerFromService(paddock.computer, {
      logger,
      sessions: () => sessions.countByComputer((ref) => paddock.computer.keyOfRef(ref)),
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
      approvals: dockApprovalsFromService(paddock.approvals),
      secureCookie: server.publicUrl?.startsWith('https://') ?? false,
    });
    closers.push(() => dock.close());
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
    const slowReader = { ...DEFAULT_SLOW_READER_LIMITS, stallMs: server.stalledPeerSeconds * 1000 };
    const mcp = new McpHttpEndpoint(mcpDeps, logger, {
      sessions,
      slowReader,
      ...(oauth ? { revokedGrants: (ids: string[]) => oauth.store.revokedAmong(ids) } : {}),
    });
    oauth?.onRevoked((ids) => mcp.closeGrants(ids));
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
        computers: (request) => answerComputersRequest(paddock.computer, loaded.dataDir, request),
        ...(options.cli ? { cli: options.cli(paddock) } : {}),
      },
    });
    const { replacedStale } = await socket.listen({ version: VERSION, url });
    closers.push(() => socket.close());
    paddock.agents.scheduler.start();
    closers.push(() => paddock.agents.scheduler.stop());
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
