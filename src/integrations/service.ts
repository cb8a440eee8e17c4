import type { Disposable } from '../shared/disposable.js';
import type { Logger } from '../shared/logger.js';
import type { Permission, Tool } from '../tools/tool.js';
import {
  McpClientPool,
  type McpClientPoolOptions,
  type ServerStatus,
  type UpstreamToolDef,
} from './client-pool.js';
import type { McpServerConfig } from './load-config.js';
import { findCollisions, sanitizeGlob } from './naming.js';
import type { LoadedPlugins, PluginStatus } from './plugins.js';
import { ToolListCache } from './tool-cache.js';
import { type UpstreamTool, upstreamTools } from './upstream-tools.js';

export interface IntegrationsOptions {
  /** Servers from `loadMcpServers(...).servers`. */
  servers: readonly McpServerConfig[];
  /** Plugins from `loadPlugins(...)`. */
  plugins?: LoadedPlugins;
  logger: Logger;
  /** JSON file keeping each server's last tool list (e.g. `<dataDir>/mcp-tools.json`); none = no cache. */
  toolCacheFile?: string;
  pool?: Omit<McpClientPoolOptions, 'logger'>;
}

/** A server as `paddock servers list` shows it. */
export interface IntegrationServerStatus extends ServerStatus {
  /** Where the registered tools come from: a live listing, the cache of an earlier run, or nowhere yet. */
  toolsFrom: 'live' | 'cache' | null;
  /** Tools registered for it now (0 while unknown). */
  registeredTools: number;
}

/** A permission rule from `mcp_servers.yaml`, in terms of full tool names. */
export interface IntegrationPermissionRule {
  pattern: string;
  permission: Permission;
  /** The tool source it is about: `mcp:<server>`. */
  source: string;
  /** Where it was declared: `mcp_servers.yaml#<server>`. */
  origin: string;
}

/** Emitted whenever the set of integration tools changes. */
export interface ToolsChangedEvent {
  tools: Tool[];
  /** Sources whose tools changed (`mcp:<server>`). */
  changedSources: string[];
}

/**
 * Upstream MCP servers and plugins as one list of {@link Tool}s. `start()` returns at once:
 * eager servers connect in the background; lazy ones register their tools from the cache of
 * the last run (no process started) or, without a cache entry, are started once in the
 * background to list their tools and stopped again. Tools appear as servers answer
 * ({@link onToolsChanged}); a server that fails is retried with backoff and never delays or
 * fails Paddock's start. Tool name collisions between two sources drop both and are
 * reported on the servers involved (never a silent shadow).
 */
export class IntegrationsService {
  readonly pool: McpClientPool;
  private readonly byServer = new Map<
    string,
    { tools: UpstreamTool[]; from: 'live' | 'cache'; defsKey: string }
  >();
  private readonly collisionErrors = new Map<string, string>();
  private readonly listeners = new Set<(event: ToolsChangedEvent) => void>();
  private readonly cache: ToolListCache | undefined;
  private current: Tool[] = [];
  private initial: Promise<void> = Promise.resolve();
  private subscriptions: Disposable[] = [];
  private started = false;

  constructor(private readonly options: IntegrationsOptions) {
    this.pool = new McpClientPool(options.servers, { ...options.pool, logger: options.logger });
    this.cache = options.toolCacheFile ? new ToolListCache(options.toolCacheFile, options.logger) : undefined;
    this.subscriptions.push(
      this.pool.onToolsChanged((server, defs) => this.onServerTools(server, defs, 'live')),
    );
    this.recompute([]);
  }

  /** Registers cached tool lists and starts background connections; resolves without waiting for any server. */
  async start(): Promise<void> {
    if (this.started) return;
    this.started = true;
    const attempts: Promise<unknown>[] = [];
    const changed: string[] = [];
    for (const config of this.options.servers) {
      if (!config.enabled) continue;
      const cached = this.cache?.get(config);
      if (cached && this.setServerTools(config, cached, 'cache')) changed.push(`mcp:${config.name}`);
      if (config.startup === 'eager') attempts.push(this.pool.start(config.name, { keepAlive: true }));
      else if (!cached) attempts.push(this.pool.listTools(config.name));
    }
    if (changed.length > 0) this.recompute(changed);
    this.initial = Promise.allSettled(attempts).then(() => undefined);
  }

  /** Settles when every first start / discovery begun by {@link start} has succeeded or failed once. */
  discovered(): Promise<void> {
    return this.initial;
  }

  /**
   * For a tool name not registered yet: starts the enabled server whose prefix it carries
   * (the longest such prefix) and waits, until `deadline`, for that server's first listing.
   * Does nothing for names of no configured server.
   */
  async discover(toolName: string, deadline: number): Promise<void> {
    const owner = this.options.servers
      .filter((c) => c.enabled && toolName.startsWith(`${c.prefix}_`))
      .sort((a, b) => b.prefix.length - a.prefix.length)[0];
    if (!owner || this.byServer.get(owner.name)?.from === 'live') return;
    await this.pool.listTools(owner.name, { deadline });
  }

  /** Every integration tool (upstream and plugin) that is registrable now. */
  tools(): Tool[] {
    return this.current;
  }

  /** Called after each change of {@link tools}; the registry replaces the listed sources. */
  onToolsChanged(listener: (event: ToolsChangedEvent) => void): Disposable {
    this.listeners.add(listener);
    return { dispose: () => this.listeners.delete(listener) };
  }

  servers(): IntegrationServerStatus[] {
    return this.pool.statuses().map((s) => {
      const entry = this.byServer.get(s.name);
      const collision = this.collisionErrors.get(s.name);
      return {
        ...s,
        lastError: collision ?? s.lastError,
        toolsFrom: entry?.from ?? null,
        registeredTools: this.current.filter((t) => t.source === `mcp:${s.name}`).length,
      };
    });
  }

  /** Plugin modules; a loaded one whose tool collides with another source shows the collision as its error. */
  plugins(): PluginStatus[] {
    return (this.options.plugins?.plugins ?? []).map((p) => {
      const collision = this.collisionErrors.get(`plugin:${p.module}`);
      return collision ? { ...p, error: collision } : p;
    });
  }

  logs(server: string): string[] {
    return this.pool.logs(server);
  }

  /** Per-server `permissions`, as rules over full tool names (`<server>_<pattern>`, sanitised like the names). */
  permissionRules(): IntegrationPermissionRule[] {
    const rules: IntegrationPermissionRule[] = [];
    for (const config of this.options.servers) {
      if (!config.enabled) continue;
      for (const [pattern, permission] of Object.entries(config.permissions)) {
        const rest = sanitizeGlob(pattern) || '*';
        rules.push({
          pattern: `${config.prefix}_${rest}`,
          permission,
          source: `mcp:${config.name}`,
          origin: `mcp_servers.yaml#${config.name}`,
        });
      }
    }
    return rules;
  }

  /** Shuts every server down and stops emitting events. */
  async close(): Promise<void> {
    for (const s of this.subscriptions) s.dispose();
    this.subscriptions = [];
    this.listeners.clear();
    await this.pool.close();
  }

  private onServerTools(server: string, defs: UpstreamToolDef[], from: 'live' | 'cache'): void {
    const config = this.pool.config(server);
    if (from === 'live') this.cache?.set(config, defs);
    const changed = this.setServerTools(config, defs, from);
    if (changed) this.recompute([`mcp:${server}`]);
  }

  /** Stores a server's tools; true when the list differs from what was registered. */
  private setServerTools(config: McpServerConfig, defs: UpstreamToolDef[], from: 'live' | 'cache'): boolean {
    const defsKey = JSON.stringify(defs);
    const previous = this.byServer.get(config.name);
    if (previous && previous.defsKey === defsKey) {
      previous.from = from;
      return false;
    }
    this.byServer.set(config.name, { tools: upstreamTools(config, defs, this.pool), from, defsKey });
    return true;
  }

  private recompute(changedSources: string[]): void {
    const candidates: { tool: Tool; origin: string; server?: string }[] = [];
    // file order, not discovery order: the tool list and collision messages are deterministic
    for (const { name: server } of this.options.servers) {
      for (const tool of this.byServer.get(server)?.tools ?? [])
        candidates.push({ tool, server, origin: `mcp:${server} (tool "${tool.upstreamName}")` });
    }
    for (const tool of this.options.plugins?.tools ?? []) candidates.push({ tool, origin: tool.source });
    const collisions = findCollisions(candidates.map((c) => ({ name: c.tool.name, origin: c.origin })));
    this.collisionErrors.clear();
    for (const [name, origins] of collisions) {
      const message = `tool name "${name}" is claimed by ${origins.join(' and ')}; neither is registered — rename a server or a plugin tool`;
      this.options.logger.error('integrations.collision', { tool: name, sources: origins });
      for (const c of candidates)
        if (c.tool.name === name) this.collisionErrors.set(c.server ?? c.tool.source, message);
    }
    const next = candidates.filter((c) => !collisions.has(c.tool.name)).map((c) => c.tool);
    this.current = next;
    if (changedSources.length === 0) return;
    for (const listener of this.listeners) {
      try {
        listener({ tools: next, changedSources });
      } catch (e) {
        this.options.logger.error('integrations.listener_failed', { error: (e as Error).message });
      }
    }
  }
}
