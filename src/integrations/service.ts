import type { AuditStore } from '../audit/types.js';
import type { Disposable } from '../shared/disposable.js';
import { Emitter } from '../shared/emitter.js';
import type { PaddockError } from '../shared/errors.js';
import type { Logger } from '../shared/logger.js';
import type { ToolPinStore } from '../store/tool-pins.js';
import type { Permission, Tool } from '../tools/tool.js';
import {
  McpClientPool,
  type McpClientPoolOptions,
  type ServerStatus,
  type UpstreamToolDef,
} from './client-pool.js';
import type { McpServerConfig } from './load-config.js';
import { findCollisions, sanitizeGlob } from './naming.js';
import { PinGuard, type QuarantineEvent, type ReviewDecision } from './pin-guard.js';
import type { LoadedPlugins, PluginStatus } from './plugins.js';
import { ToolListCache } from './tool-cache.js';
import { configPinProblem, type ToolChange } from './tool-pins.js';
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
  /**
   * Where tool pins live (and where quarantines are audited). Without it every listed tool is
   * registered as listed; servers with `pins` in mcp_servers.yaml are checked by those instead.
   */
  pins?: { store: ToolPinStore; audit?: AuditStore };
  /** Spans of upstream calls carry their inputs (telemetry.otlp.includeInputs). */
  traceInputs?: boolean;
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
  private readonly toolsChanged: Emitter<ToolsChangedEvent>;
  private readonly cache: ToolListCache | undefined;
  private current: Tool[] = [];
  private initial: Promise<void> = Promise.resolve();
  private subscriptions: Disposable[] = [];
  private started = false;
  /** Judges listed tools against their pins (absent: no store given). */
  private readonly guard: PinGuard | undefined;
  /** Per server, the judging and registering of its latest list (lists apply in order). */
  private readonly applying = new Map<string, Promise<void>>();

  constructor(private readonly options: IntegrationsOptions) {
    this.toolsChanged = new Emitter((e) =>
      options.logger.error('integrations.listener_failed', { error: (e as Error).message }),
    );
    this.pool = new McpClientPool(options.servers, { ...options.pool, logger: options.logger });
    this.cache = options.toolCacheFile ? new ToolListCache(options.toolCacheFile, options.logger) : undefined;
    this.guard = options.pins ? new PinGuard({ logger: options.logger, ...options.pins }) : undefined;
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
    const enabled = this.options.servers.filter((c) => c.enabled);
    await this.guard?.load(enabled.filter((c) => !c.pins).map((c) => c.name));
    for (const config of enabled) {
      const cached = this.cache?.get(config);
      if (cached) await this.applyTools(config, cached, 'cache');
      if (config.startup === 'eager') attempts.push(this.pool.start(config.name, { keepAlive: true }));
      else if (!cached) attempts.push(this.pool.listTools(config.name));
    }
    this.initial = Promise.allSettled(attempts).then(() => this.settled());
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
    await this.applying.get(owner.name);
  }

  /** Lists `server` when its tools are unknown (starting it, bounded by `deadline`) and registers them. */
  async refreshTools(server: string, deadline: number): Promise<void> {
    await this.pool.listTools(server, { deadline });
    await this.applying.get(server);
  }

  /**
   * TOOL_QUARANTINED for a registry name whose tool is quarantined, else undefined. The pins
   * are read again first: when another server of the fleet accepted the change, the tool is
   * registered now and this answers undefined.
   */
  async quarantined(name: string): Promise<PaddockError | undefined> {
    const guard = this.guard;
    const found = guard?.quarantineError(name);
    if (!guard || !found) return undefined;
    const server = String(found.details.server);
    await guard.reload(server);
    const list = guard.lastList(server);
    if (list)
      await this.applyTools(this.pool.config(server), list, this.byServer.get(server)?.from ?? 'live');
    return guard.quarantineError(name);
  }

  /** Added, changed and removed tools awaiting a review (of one server, or of all). */
  pendingChanges(server?: string): ToolChange[] {
    if (server !== undefined) this.pool.config(server); // NOT_FOUND for an unknown server
    return this.guard?.changes(server) ?? [];
  }

  /**
   * Accepts or rejects the pending changes of `server` (all, or the named upstream tools) and
   * registers the tools that are usable now. Returns the changes decided.
   */
  async review(
    server: string,
    decision: ReviewDecision,
    decidedBy: string,
    tools?: readonly string[],
  ): Promise<ToolChange[]> {
    const config = this.pool.config(server);
    if (!this.guard || config.pins) return [];
    const decided = await this.guard.decide(server, decision, decidedBy, tools);
    const list = this.guard.lastList(server);
    if (list) await this.applyTools(config, list, this.byServer.get(server)?.from ?? 'live');
    return decided;
  }

  /** Fires when quarantined tools appear or are decided (the dock's notice). */
  onQuarantine(listener: (event: QuarantineEvent) => void): Disposable {
    return this.guard?.onChange(listener) ?? { dispose: () => undefined };
  }

  /** Every integration tool (upstream and plugin) that is registrable now. */
  tools(): Tool[] {
    return this.current;
  }

  /** Called after each change of {@link tools}; the registry replaces the listed sources. */
  onToolsChanged(listener: (event: ToolsChangedEvent) => void): Disposable {
    return this.toolsChanged.on(listener);
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
    this.toolsChanged.clear();
    await this.pool.close();
    await Promise.all(this.applying.values());
    await this.guard?.flush();
  }

  private onServerTools(server: string, defs: UpstreamToolDef[], from: 'live' | 'cache'): void {
    const config = this.pool.config(server);
    if (from === 'live') this.cache?.set(config, defs);
    void this.applyTools(config, defs, from);
  }

  /**
   * Judges `defs` against the server's pins and registers the usable ones, after the lists
   * before it (per server, in order). A pin store that fails registers none of the server's
   * tools: an unchecked tool is never offered.
   */
  private applyTools(
    config: McpServerConfig,
    defs: UpstreamToolDef[],
    from: 'live' | 'cache',
  ): Promise<void> {
    const previous = this.applying.get(config.name) ?? Promise.resolve();
    const next = previous.then(async () => {
      let usable = defs;
      // a list of the cache (or any list) that breaks the file's pins registers nothing
      if (config.pins && configPinProblem(config.pins, defs)) usable = [];
      else if (this.guard && !config.pins) {
        try {
          usable = await this.guard.usable(config.name, defs);
        } catch (e) {
          this.options.logger.error('integrations.pins_failed', {
            server: config.name,
            error: (e as Error).message,
          });
          usable = [];
        }
      }
      if (this.setServerTools(config, usable, from)) this.recompute([`mcp:${config.name}`]);
    });
    this.applying.set(config.name, next);
    return next;
  }

  /** Settles once every list received so far is judged and registered. */
  private async settled(): Promise<void> {
    await Promise.all(this.applying.values());
  }

  /** Stores a server's tools; true when the list differs from what was registered. */
  private setServerTools(config: McpServerConfig, defs: UpstreamToolDef[], from: 'live' | 'cache'): boolean {
    const defsKey = JSON.stringify(defs);
    const previous = this.byServer.get(config.name);
    if (previous && previous.defsKey === defsKey) {
      previous.from = from;
      return false;
    }
    this.byServer.set(config.name, {
      tools: upstreamTools(config, defs, this.pool, this.options.traceInputs === true),
      from,
      defsKey,
    });
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
    this.toolsChanged.emit({ tools: next, changedSources });
  }
}
