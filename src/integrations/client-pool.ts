import type { Client } from '@modelcontextprotocol/client';
import type { Disposable } from '../shared/disposable.js';
import { Emitter } from '../shared/emitter.js';
import { PaddockError } from '../shared/errors.js';
import type { Logger } from '../shared/logger.js';
import type { Progress, ToolResult } from '../tools/tool.js';
import type { McpServerConfig } from './load-config.js';
import {
  type BackoffOptions,
  ServerConnection,
  type ServerState,
  type UpstreamToolDef,
} from './server-connection.js';

export type { ServerState, UpstreamToolDef };

/** Default cap on one upstream message (a tool result): 10 MiB. */
export const DEFAULT_MAX_RESULT_BYTES = 10 * 1024 * 1024;

/** Used when a call has no finite deadline. */
const FALLBACK_CALL_TIMEOUT_MS = 300_000;

/** Deadlines closer than this to "now" when the call failed count as reached. */
const DEADLINE_SLACK_MS = 20;

export interface McpClientPoolOptions {
  logger: Logger;
  /** Name and version Paddock announces in `initialize`. */
  clientInfo?: { name: string; version: string };
  /** Largest single message (tool result) accepted from a server; default 10 MiB. */
  maxResultBytes?: number;
  /** Restart backoff; default 250 ms doubling to 10 s, reset after 30 s of uptime. */
  backoff?: Partial<BackoffOptions>;
  /** stderr lines kept per server for `paddock servers logs`; default 200. */
  stderrLines?: number;
  /** Grace after closing a server's stdin before SIGTERM, and again before SIGKILL; default 1000 ms. */
  shutdownGraceMs?: number;
}

/** What `paddock servers list` shows for one server. */
export interface ServerStatus {
  name: string;
  transport: 'stdio' | 'http' | 'sse';
  startup: 'lazy' | 'eager';
  state: ServerState;
  /** Tools listed by the running server, or null when never listed in this run. */
  toolCount: number | null;
  lastError: string | null;
  /** Restarts after a crash or a failed start. */
  restarts: number;
  /** Process id of a running stdio server. */
  pid: number | null;
  /** When a restart is scheduled: milliseconds until it. */
  nextRetryInMs: number | null;
}

/** Options of one upstream call. */
export interface PoolCallOptions {
  signal?: AbortSignal;
  /** Absolute deadline, epoch milliseconds: passed to the SDK as the request timeout. */
  deadline?: number;
  onProgress?: (progress: Progress) => void;
}

/**
 * Connections to every upstream MCP server of `mcp_servers.yaml`, on the MCP v2 client SDK:
 * stdio and Streamable HTTP (and legacy SSE). Servers start on first use (or via
 * {@link start}), their tool lists are followed (`notifications/tools/list_changed`), a
 * crashed server restarts with backoff, and every failure reaches callers as a PaddockError
 * `UPSTREAM_ERROR` naming the server — never a hang.
 */
export class McpClientPool {
  private readonly connections = new Map<string, ServerConnection>();
  private readonly toolsListed: Emitter<{ server: string; tools: UpstreamToolDef[] }>;
  private readonly stateChanged: Emitter<string>;
  private readonly logger: Logger;

  constructor(servers: readonly McpServerConfig[], options: McpClientPoolOptions) {
    this.logger = options.logger;
    const failed = (e: unknown) => this.logger.error('mcp.listener_failed', { error: (e as Error).message });
    this.toolsListed = new Emitter(failed);
    this.stateChanged = new Emitter(failed);
    const backoff: BackoffOptions = { initialMs: 250, maxMs: 10_000, stableMs: 30_000, ...options.backoff };
    for (const config of servers) {
      this.connections.set(
        config.name,
        new ServerConnection(config, {
          logger: options.logger,
          clientInfo: options.clientInfo ?? { name: 'paddock', version: '0.1.0' },
          maxResultBytes: options.maxResultBytes ?? DEFAULT_MAX_RESULT_BYTES,
          backoff,
          stderrLines: options.stderrLines ?? 200,
          shutdownGraceMs: options.shutdownGraceMs ?? 1000,
          onTools: (server, tools) => this.toolsListed.emit({ server, tools }),
          onState: (server) => this.stateChanged.emit(server),
        }),
      );
    }
  }

  /** Server names, in file order. */
  names(): string[] {
    return [...this.connections.keys()];
  }

  config(server: string): McpServerConfig {
    return this.get(server).config;
  }

  /**
   * Starts a server and waits until it is ready (bounded by its `timeoutMs`). `keepAlive`
   * (default true) keeps it running; false lists its tools and stops a lazy server again.
   */
  async start(server: string, options: { keepAlive?: boolean; deadline?: number } = {}): Promise<void> {
    const conn = this.get(server);
    const deadline = options.deadline ?? Date.now() + conn.config.timeoutMs + 1000;
    await conn.ready(deadline, { keepAlive: options.keepAlive ?? true });
  }

  /** The server's tools: the last list when known, else it is started (without keeping a lazy one up) and listed. */
  async listTools(server: string, options: { deadline?: number } = {}): Promise<UpstreamToolDef[]> {
    const conn = this.get(server);
    const known = conn.knownTools();
    if (known) return known;
    await this.start(server, { keepAlive: false, ...options });
    return conn.knownTools() ?? [];
  }

  /** The last tool list seen in this run, or null. */
  knownTools(server: string): UpstreamToolDef[] | null {
    return this.get(server).knownTools();
  }

  /**
   * Calls `tool` on `server`, starting it if needed. The deadline becomes the SDK request
   * timeout; abort or timeout sends `notifications/cancelled` upstream. Resolves with the
   * mapped result (an upstream `isError` result resolves with `isError: true`); rejects with
   * PaddockError `UPSTREAM_ERROR` (server unavailable, no answer by the deadline, connection
   * lost, malformed or oversized result) or `TIMEOUT` when the caller cancelled.
   */
  async callTool(
    server: string,
    tool: string,
    args: Record<string, unknown>,
    options: PoolCallOptions = {},
  ): Promise<ToolResult> {
    const conn = this.get(server);
    const deadline =
      options.deadline !== undefined && Number.isFinite(options.deadline)
        ? options.deadline
        : Date.now() + FALLBACK_CALL_TIMEOUT_MS;
    const { signal } = options;
    const live = await conn.ready(deadline, { keepAlive: true, ...(signal ? { signal } : {}) });
    const timeoutMs = Math.max(1, deadline - Date.now());
    // loaded with the SDK when the server connected
    const { callError, toToolResult } = await import('./upstream-result.js');
    let raw: unknown;
    try {
      raw = await conn.call(live, tool, args, {
        timeoutMs,
        ...(signal ? { signal } : {}),
        ...(options.onProgress ? { onProgress: options.onProgress } : {}),
      });
    } catch (e) {
      throw callError(e, {
        server,
        tool,
        ...(live.closeReason ? { closeReason: live.closeReason } : {}),
        deadlineReached: Date.now() >= deadline - DEADLINE_SLACK_MS,
        cancelledByCaller: signal?.aborted === true,
        timeoutMs,
      });
    }
    return toToolResult(server, tool, raw);
  }

  /** Fires when a server's tool list is (re)listed: at every start and on `tools/list_changed`. */
  onToolsChanged(listener: (server: string, tools: UpstreamToolDef[]) => void): Disposable {
    return this.toolsListed.on(({ server, tools }) => listener(server, tools));
  }

  /** Fires on every state change of a server. */
  onStateChanged(listener: (server: string) => void): Disposable {
    return this.stateChanged.on(listener);
  }

  status(server: string): ServerStatus {
    const conn = this.get(server);
    const { config } = conn;
    return { name: config.name, transport: config.transport, startup: config.startup, ...conn.status() };
  }

  statuses(): ServerStatus[] {
    return this.names().map((n) => this.status(n));
  }

  /** The last stderr lines of a server (with `[paddock]` start/exit markers), oldest first. */
  logs(server: string): string[] {
    return this.get(server).stderr.snapshot();
  }

  /** Stops a server, leaving it idle until its next use. */
  async stop(server: string): Promise<void> {
    await this.get(server).stop();
  }

  /** The SDK client of a ready server, for diagnostics and benchmarks (calls should use {@link callTool}). */
  connectedClient(server: string): Client | undefined {
    return this.get(server).client();
  }

  /** Shuts every server down (stdin closed, then SIGTERM, then SIGKILL of the process tree); idempotent. */
  async close(): Promise<void> {
    await Promise.all([...this.connections.values()].map((c) => c.close()));
  }

  private get(server: string): ServerConnection {
    const conn = this.connections.get(server);
    if (!conn) {
      throw new PaddockError(
        'NOT_FOUND',
        `No MCP server named "${server}" in mcp_servers.yaml; run \`paddock servers list\` to see the configured ones.`,
        { server },
      );
    }
    return conn;
  }
}
