/** The composition root's services: `createPaddock` wires every service of one Paddock. */
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { type AgentsService, createAgentNamespaceOf, createAgents } from '../agents/index.js';
import { ApprovalService } from '../approvals/service.js';
import type { AuditStore, MemoryStore } from '../audit/types.js';
import { ChannelSession } from '../channel/session.js';
import { BrowserBackend, withBrowserBackend } from '../computer/backend/browser/backend.js';
import { BrowserImage } from '../computer/backend/browser/image.js';
import { BwrapBackend } from '../computer/backend/bwrap/backend.js';
import { withPidFiles } from '../computer/backend/bwrap/sandbox-pids.js';
import type { ComputerBackend } from '../computer/backend/types.js';
import { ApprovalEgressAsker, EGRESS_APPROVAL_DESCRIPTION } from '../computer/egress-ask.js';
import { EgressService } from '../computer/generation/egress.js';
import type { EgressAsker } from '../computer/generation/egress-types.js';
import { openProfileImages } from '../computer/images/index.js';
import { ComputerService } from '../computer/service.js';
import { createComputerBuiltins } from '../computer/tools/computer-builtins.js';
import { createComputerTools } from '../computer/tools/index.js';
import { ConfigError } from '../config/config-error.js';
import type { LoadedConfig } from '../config/load.js';
import type { PaddockConfig } from '../config/paddock-config.js';
import { loadMcpServers } from '../integrations/load-config.js';
import { loadPlugins } from '../integrations/plugins.js';
import { IntegrationsService } from '../integrations/service.js';
import { createViewTools } from '../mcp/app/view-tools.js';
import { compileInjectRules } from '../net/egress/inject.js';
import { loadTerminatingCa } from '../net/egress/tls-ca.js';
import { DEFAULT_EGRESS_LIMITS } from '../net/egress/types.js';
import type { Notifier } from '../net/notifier.js';
import { compilePolicy } from '../policy/compile.js';
import { createSystemHostResolver, createWhitelistSandbox, rulePorts } from '../policy/index.js';
import { ReloadableSandbox } from '../policy/reloadable.js';
import type { Sandbox } from '../policy/types.js';
import { isPaddockError } from '../shared/errors.js';
import type { Logger } from '../shared/logger.js';
import { openStores } from '../store/open.js';
import type { Stores } from '../store/stores.js';
import { createTracer } from '../telemetry/index.js';
import { createBuiltinServices, createBuiltinTools } from '../tools/builtin/index.js';
import { explicitNamespaces } from '../tools/builtin/save-memory.js';
import { Gateway } from '../tools/gateway.js';
import { PermissionPolicy, type PermissionRule } from '../tools/permissions.js';
import { ToolRegistry } from '../tools/registry.js';
import type { Tool } from '../tools/tool.js';
import { InputValidator } from '../tools/validation.js';

import { DockVmHosts } from '../web/dock/vm-hosts.js';
import { checkpointBeforeApproved } from './approval-checkpoints.js';
import { type Closer, closeInReverse } from './common.js';

/** The bwrap backend; without cgroups, its sandboxes are tracked by pid file for the next start's sweep. */
function sandboxBackend(
  sandboxUid: number,
  dataDir: string,
  logger: Logger,
): { backend: ComputerBackend; imageSupport: () => string | null } {
  const bwrap = new BwrapBackend({ logger, sandboxUid });
  return {
    backend: bwrap.cgroupSupport ? bwrap : withPidFiles(bwrap, join(dataDir, 'run', 'sandboxes'), logger),
    imageSupport: () => bwrap.imageSupport(),
  };
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
  policyConfig: () => PaddockConfig['policy'] = () => loaded.config.policy,
  asker?: EgressAsker,
) {
  const { config } = loaded;
  const profileAllows = config.computer.profiles.flatMap((p) => (p.network.allow ? [p.network.allow] : []));
  try {
    for (const profile of config.computer.profiles) EgressService.checkProfile(profile);
    const inject = compileInjectRules(config.policy.http.inject);
    return new EgressService({
      policy,
      dns: createSystemHostResolver(),
      audit,
      limits: DEFAULT_EGRESS_LIMITS,
      env,
      ports: () => rulePorts(policyConfig(), profileAllows),
      ...(asker ? { asker } : {}),
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

/** The wired services of one Paddock process. */
export interface Paddock {
  loaded: LoadedConfig;
  logger: Logger;
  /** Every store (audit, memories, runs, launch links, approvals, OAuth), over one database. */
  stores: Stores;
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
  /** Delivers to the notify channels of paddock.yaml. */
  notifier: Notifier;
  /** The dock pages that host browser computers, and the image they boot. */
  browser: { hosts: DockVmHosts; image: BrowserImage };
  /** Tells the services where the dock listens (links in launch answers and approval requests). */
  setDockUrl(url: string): void;
  /**
   * Puts the `policy` of a validated config in force (paddock.yaml reloaded): every decision
   * from now on, of tools and of computers' connections, uses it.
   */
  applyPolicy(config: PaddockConfig): Promise<void>;
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
  const stores = await openStores(config.store, { dataDir, env, logger: logger.child({ domain: 'store' }) });
  const closers: Closer[] = [() => stores.close()];
  // closed after every service (closers run in reverse), so the last spans are sent
  const tracer = createTracer(config.telemetry, stores.serverId, logger.child({ domain: 'telemetry' }));
  closers.push(() => tracer.close());
  try {
    const { audit, memory } = stores;
    const interrupted = await audit.reconcile();
    if (interrupted > 0) logger.warn('audit.interrupted', { calls: interrupted });
    const policy = new ReloadableSandbox(compilePolicy(loaded));
    let policyConfig = config.policy;
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
      pins: { store: stores.toolPins, audit },
      traceInputs: tracer.includeInputs,
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
    const approvals = await ApprovalService.open({
      store: stores.approvals,
      logger: logger.child({ domain: 'approvals' }),
      mcp: config.approvals.mcp,
      deciders: config.approvals.deciders,
      timeoutMs: config.approvals.timeoutSeconds * 1000,
      maxPendingPerCaller: config.approvals.maxPendingPerCaller,
      describe: (name) =>
        registry.get(name)?.description ??
        (name.startsWith('egress:') ? EGRESS_APPROVAL_DESCRIPTION : undefined),
      link: (id) => (dockBase ? `${dockBase.replace(/\/+$/, '')}/#approvals/${id}` : undefined),
    });
    closers.push(() => approvals.close());
    const gateway = new Gateway({
      tracer,
      approvals,
      checkpointBeforeApproved: checkpointBeforeApproved({
        computers: () => computer,
        approvals: stores.approvals,
        logger: logger.child({ domain: 'checkpoints' }),
      }),
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
        quarantined: (name) => integrations.quarantined(name),
      },
    });

    const skillsDir = join(loaded.projectDir, '.paddock', 'skills');
    // browser computers boot in dock pages; without a dock no page offers to host one
    const browser = { hosts: new DockVmHosts(logger.child({ domain: 'dock' })), image: new BrowserImage() };
    const asker = new ApprovalEgressAsker(
      approvals,
      logger.child({ domain: 'egress' }),
      config.approvals.timeoutSeconds * 1000,
    );
    await asker.start();
    closers.push(() => asker.close());
    const egress = createEgress(loaded, policy, audit, env, () => policyConfig, asker);
    const sandboxes = sandboxBackend(config.computer.sandboxUid, dataDir, logger);
    const computer = new ComputerService({
      backend: withBrowserBackend(sandboxes.backend, new BrowserBackend(browser.hosts, browser.image)),
      images: openProfileImages(config.computer, dataDir, loaded.projectDir, sandboxes.imageSupport),
      config: config.computer,
      dataDir,
      dockUrl:
        options.dockUrl ?? config.server.publicUrl ?? `http://${config.server.host}:${config.server.port}`,
      logger,
      launchLinks: stores.launchLinks,
      egress,
      ...(options.preview ? { preview: options.preview } : {}),
      quotas: {
        clients: config.principals.clients,
        agents: config.principals.agents,
        ownerReserve: config.principals.ownerReserve.computers,
      },
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
    const runs = stores.runs;
    // a client's under client:<id>, the owner's by kind of caller; principals.memory shares explicitly
    const namespaceOf = explicitNamespaces(config.principals.memory, createAgentNamespaceOf(runs));
    const { http, notifier } = createBuiltinServices({ memory, notify: config.notify, logger });
    registry.register(
      createBuiltinTools({ memory, notify: config.notify, logger, notifier, httpClient: http, namespaceOf }),
    );
    registry.register(createComputerTools(computer));
    registry.register(createComputerBuiltins(computer));
    // the computer view's own tools: reachable only by clients that declared MCP Apps
    registry.register(
      createViewTools({
        computers: computer,
        approvals,
        permissionOf: (name) => {
          const tool = registry.get(name);
          return tool ? gateway.permissionOf(tool) : undefined;
        },
      }),
    );
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
    const agents = await createAgents({
      projectDir: loaded.projectDir,
      dataDir,
      gateway,
      registry,
      integrations,
      notifier,
      policy,
      policyConfig: config.policy,
      logger,
      env,
      config: config.agents,
      store: runs,
      serverId: stores.serverId,
      lease: config.agents.runLease,
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
      stores,
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
      notifier,
      browser,
      setDockUrl: (url) => {
        dockBase = url;
        computer.setDockUrl(url);
      },
      applyPolicy: async (next) => {
        policy.replace(createWhitelistSandbox(next.policy));
        policyConfig = next.policy;
        await egress.policyChanged();
      },
      close: () => closeInReverse(closers, logger),
    };
  } catch (e) {
    await closeInReverse(closers, logger);
    throw e;
  }
}
