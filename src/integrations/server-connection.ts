import type { Client, Tool as SdkTool } from '@modelcontextprotocol/client';
import { sleep } from '../shared/abort.js';
import { PaddockError } from '../shared/errors.js';
import type { ConnectionOptions, Live, ServerState, UpstreamToolDef } from './connection-types.js';
import { raceDeadline, shutdown, toDef } from './connection-util.js';
import type { McpServerConfig } from './load-config.js';
import { isAlive, processTree, signalAll } from './process-tree.js';
import { StderrLog } from './stderr-log.js';
import { configPinProblem } from './tool-pins.js';
import type { UpstreamTransport } from './transports.js';
import { clip, overflowReason } from './upstream-text.js';

export type {
  BackoffOptions,
  ConnectionOptions,
  Live,
  ServerState,
  UpstreamToolDef,
} from './connection-types.js';

/**
 * The MCP client SDK and the code over it, imported at the first connection: a Paddock whose
 * upstream servers are not started (none configured, lazy ones listed from the cache, a CLI
 * command) never loads the SDK.
 */
const loadClient = () =>
  Promise.all([
    import('@modelcontextprotocol/client'),
    import('./transports.js'),
    import('./upstream-result.js'),
  ]);

/**
 * One upstream server: starts it (stdio process or HTTP session) with initialize and
 * tools/list bounded by `timeoutMs`, follows `tools/list_changed`, keeps its stderr, and
 * restarts it with backoff after a crash or a failed start while it is wanted (eager, used
 * by a call, or its tool list is still unknown). Never throws anything but PaddockError.
 */
export class ServerConnection {
  private state: ServerState;
  private live: Live | undefined;
  private starting: Promise<Live> | undefined;
  private retryTimer: NodeJS.Timeout | undefined;
  private nextAttemptAt = 0;
  private delayMs: number;
  private readyAt = 0;
  private restarts = 0;
  private lastError: string | null = null;
  private tools: UpstreamToolDef[] | null = null;
  private keepAlive: boolean;
  private closed = false;
  private inflight = 0;
  /** Set when the listed tools differ from the hashes mcp_servers.yaml pins: no restart until a call asks. */
  private pinRefusal: string | null = null;
  readonly stderr: StderrLog;

  constructor(
    readonly config: McpServerConfig,
    private readonly opts: ConnectionOptions,
  ) {
    this.state = config.enabled ? 'idle' : 'disabled';
    this.keepAlive = config.startup === 'eager';
    this.delayMs = opts.backoff.initialMs;
    this.stderr = new StderrLog(opts.stderrLines, (line) =>
      opts.logger.info('mcp.stderr', { server: config.name, line }),
    );
  }

  get name(): string {
    return this.config.name;
  }

  status() {
    const pid = this.live && !this.live.closing ? this.live.upstream.pid() : null;
    return {
      state: this.state,
      toolCount: this.tools?.length ?? null,
      lastError: this.lastError,
      restarts: this.restarts,
      pid,
      nextRetryInMs: this.retryTimer ? Math.max(0, this.nextAttemptAt - Date.now()) : null,
    };
  }

  knownTools(): UpstreamToolDef[] | null {
    return this.tools;
  }

  /** The connected client when ready (diagnostics and benchmarks). */
  client(): Client | undefined {
    return this.state === 'ready' ? this.live?.client : undefined;
  }

  /**
   * Makes the server ready before `deadline`. `keepAlive` marks it wanted: it then stays up
   * and is restarted after a crash; without it (tool discovery) a lazy server stops again.
   */
  async ready(deadline: number, options: { keepAlive: boolean; signal?: AbortSignal }): Promise<Live> {
    if (this.state === 'disabled') {
      throw this.error(`is disabled in mcp_servers.yaml; set enabled: true to use its tools`);
    }
    if (this.closed) throw this.error('is shut down (Paddock is stopping)');
    if (options.keepAlive) this.keepAlive = true;
    if (this.state === 'ready' && this.live && !this.live.closing) {
      if (this.processAlive(this.live)) return this.live;
      // the process died and the SDK has not noticed yet: handle it as the crash it is
      this.onClose(this.live);
    }
    const waitMs = this.nextAttemptAt - Date.now();
    if (!this.starting && waitMs > 0 && this.nextAttemptAt > deadline) {
      throw this.error(
        `is unavailable (${this.lastError ?? 'it failed'}); the next start attempt is in ${waitMs} ms, ` +
          `after this call's deadline. Retry later, or see \`paddock servers logs ${this.name}\``,
      );
    }
    const attempt = (async () => {
      if (!this.starting && waitMs > 0) await sleep(waitMs);
      return this.connect();
    })();
    return raceDeadline(attempt, deadline, options.signal, () =>
      this.error(`did not become ready before the call's deadline (state: ${this.state}); retry the call`),
    );
  }

  /** Calls one tool; the SDK sends `notifications/cancelled` when `signal` aborts or the timeout passes. */
  async call(
    live: Live,
    tool: string,
    args: Record<string, unknown>,
    options: {
      signal?: AbortSignal;
      timeoutMs: number;
      onProgress?: (p: { progress: number; total?: number; message?: string }) => void;
    },
  ): Promise<unknown> {
    this.inflight++;
    try {
      return await live.client.callTool(
        { name: tool, arguments: args },
        {
          timeout: options.timeoutMs,
          maxTotalTimeout: options.timeoutMs,
          ...(options.signal ? { signal: options.signal } : {}),
          ...(options.onProgress ? { onprogress: options.onProgress } : {}),
        },
      );
    } catch (e) {
      const { isConnectionFailure } = await import('./upstream-result.js');
      if (this.config.transport !== 'stdio' && isConnectionFailure(e) && !live.closing) {
        this.drop(live, `the connection failed (${clip((e as Error).message ?? String(e), 200)})`);
      }
      throw e;
    } finally {
      this.inflight--;
    }
  }

  /** Stops a running server and leaves it idle (a lazy server after discovery). */
  async stop(): Promise<void> {
    const live = this.live;
    this.live = undefined;
    if (this.state !== 'disabled') this.setState('idle');
    if (live) await this.teardown(live);
  }

  /** Shuts the server down for good: no restart, no leftover processes. */
  async close(): Promise<void> {
    this.closed = true;
    this.clearRetry();
    const live = this.live;
    this.live = undefined;
    if (live) await this.teardown(live);
    await this.starting?.catch(() => {});
    if (this.state !== 'disabled') this.setState('idle');
  }

  private connect(): Promise<Live> {
    if (this.closed) return Promise.reject(this.error('is shut down (Paddock is stopping)'));
    if (this.state === 'ready' && this.live && !this.live.closing) return Promise.resolve(this.live);
    if (!this.starting) {
      this.clearRetry();
      this.starting = this.doConnect().finally(() => {
        this.starting = undefined;
      });
    }
    return this.starting;
  }

  private async doConnect(): Promise<Live> {
    if (this.state === 'error') this.restarts++;
    this.setState('starting');
    const started = Date.now();
    const { timeoutMs } = this.config;
    const [{ Client, SdkError, SdkErrorCode }, { createTransport }, { startFailureReason }] =
      await loadClient();
    const client = new Client(this.opts.clientInfo, {
      listChanged: {
        tools: { debounceMs: 50, onChanged: (err, tools) => this.onListChanged(live, err, tools) },
      },
    });
    let upstream: UpstreamTransport;
    try {
      upstream = createTransport(this.config, {
        maxResultBytes: this.opts.maxResultBytes,
        stderr: this.stderr,
        onOverflow: (bytes) => this.drop(live, overflowReason(this.opts.maxResultBytes, bytes)),
      });
    } catch (e) {
      const reason = clip((e as Error).message ?? String(e), 300);
      this.fail(reason);
      throw this.error(`could not be started: ${reason}`);
    }
    const live: Live = { client, upstream, tree: [], closing: false };
    client.onerror = (err) => {
      this.opts.logger.debug('mcp.transport_error', { server: this.name, error: err.message });
      if (/ReadBuffer exceeded/.test(err.message))
        live.closeReason = overflowReason(this.opts.maxResultBytes);
    };
    client.onclose = () => this.onClose(live);
    this.live = live;
    let phase = 'initialize';
    try {
      await client.connect(live.upstream.transport, { timeout: timeoutMs });
      const pid = live.upstream.pid();
      if (pid) this.stderr.add(`[paddock] started pid ${pid}`, false);
      phase = 'tools/list';
      const listed = await client.listTools(undefined, {
        timeout: Math.max(1, timeoutMs - (Date.now() - started)),
      });
      if (live.closing || this.closed) throw new SdkError(SdkErrorCode.ConnectionClosed, 'Connection closed');
      const tools = listed.tools.map(toDef);
      this.pinRefusal = this.pinProblem(tools);
      if (this.pinRefusal) {
        live.closeReason = this.pinRefusal;
        throw new Error(this.pinRefusal);
      }
      this.tools = tools;
      live.tree = pid ? processTree(pid) : [];
      this.readyAt = Date.now();
      this.setState('ready');
      this.opts.logger.info('mcp.ready', {
        server: this.name,
        tools: this.tools.length,
        ms: this.readyAt - started,
      });
      this.opts.onTools(this.name, this.tools);
      if (!this.keepAlive && this.inflight === 0) void this.stop();
      return live;
    } catch (e) {
      const reason =
        live.closeReason ?? startFailureReason(e, phase, this.config, this.stderr.lastServerLine());
      if (this.live === live) this.live = undefined;
      await this.teardown(live);
      if (this.closed) throw this.error('is shut down (Paddock is stopping)');
      this.fail(reason);
      throw this.error(
        `could not be started: ${reason}. Check its configuration and \`paddock servers logs ${this.name}\``,
      );
    }
  }

  private onListChanged(live: Live, err: Error | null, tools: SdkTool[] | null): void {
    if (this.live !== live || live.closing) return;
    if (err || !tools) {
      this.opts.logger.warn('mcp.list_failed', { server: this.name, error: err?.message ?? 'no tools' });
      return;
    }
    const defs = tools.map(toDef);
    this.pinRefusal = this.pinProblem(defs);
    if (this.pinRefusal) {
      this.drop(live, this.pinRefusal);
      return;
    }
    this.tools = defs;
    this.opts.logger.info('mcp.tools_changed', { server: this.name, tools: this.tools.length });
    this.opts.onTools(this.name, this.tools);
  }

  private onClose(live: Live): void {
    if (live.closing || this.closed) return;
    live.closing = true;
    if (this.live === live) this.live = undefined;
    if (this.state === 'starting') return; // the pending connect() fails and handles it
    const last = this.stderr.lastServerLine();
    const reason =
      live.closeReason ??
      (this.config.transport === 'stdio'
        ? `the server process exited unexpectedly${last ? ` (last stderr line: "${clip(last, 200)}")` : ''}`
        : 'the server closed the connection');
    this.stderr.add('[paddock] exited', false);
    signalAll(live.tree, 'SIGKILL');
    if (Date.now() - this.readyAt >= this.opts.backoff.stableMs) this.delayMs = this.opts.backoff.initialMs;
    this.fail(reason);
  }

  /** False when a stdio server's process is gone (or a zombie); HTTP connections count as alive. */
  private processAlive(live: Live): boolean {
    if (this.config.transport !== 'stdio') return true;
    const pid = live.upstream.pid();
    return pid !== null && isAlive({ pid, startTime: '' });
  }

  /** Drops a connection Paddock no longer trusts (a message over the cap, a broken HTTP session). */
  private drop(live: Live, reason: string): void {
    if (live.closing) return;
    live.closeReason ??= reason;
    live.closing = true;
    if (this.live === live) this.live = undefined;
    const wasReady = this.state === 'ready';
    void this.teardown(live);
    if (wasReady && !this.closed) this.fail(live.closeReason);
  }

  private fail(reason: string): void {
    this.lastError = reason;
    this.setState('error');
    this.opts.logger.warn('mcp.failed', { server: this.name, error: reason });
    const delay = this.delayMs;
    this.delayMs = Math.min(this.delayMs * 2, this.opts.backoff.maxMs);
    this.nextAttemptAt = Date.now() + delay;
    // Wanted servers retry for ever; a lazy server whose tools are still unknown retries until the
    // backoff reaches its maximum, then waits for a call (a broken token must not respawn for ever).
    const wanted = this.keepAlive || (this.tools === null && delay < this.opts.backoff.maxMs);
    if (!wanted || this.closed || this.pinRefusal) return;
    this.clearRetry();
    this.retryTimer = setTimeout(() => {
      this.retryTimer = undefined;
      this.opts.logger.info('mcp.restart', { server: this.name, restarts: this.restarts + 1 });
      this.connect().catch(() => {});
    }, delay);
    this.retryTimer.unref();
  }

  /** Why the listed tools break `pins` of mcp_servers.yaml, or null (also when it pins nothing). */
  private pinProblem(tools: readonly UpstreamToolDef[]): string | null {
    if (!this.config.pins) return null;
    const problem = configPinProblem(this.config.pins, tools);
    return problem
      ? `its tools do not match the pins of mcp_servers.yaml (${problem}); review the change, then update the pins`
      : null;
  }

  private teardown(live: Live): Promise<void> {
    return shutdown(live, this.opts.shutdownGraceMs);
  }

  private clearRetry(): void {
    if (this.retryTimer) clearTimeout(this.retryTimer);
    this.retryTimer = undefined;
  }

  private setState(state: ServerState): void {
    if (this.state === state) return;
    this.state = state;
    this.opts.onState(this.name);
  }

  private error(what: string): PaddockError {
    return new PaddockError('UPSTREAM_ERROR', `MCP server "${this.name}" ${what}.`, { server: this.name });
  }
}
