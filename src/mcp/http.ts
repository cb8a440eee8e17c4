import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { isInitializeRequest } from '@modelcontextprotocol/server';
import { computerNameProblem } from '../shared/computer-name.js';
import type { Logger } from '../shared/logger.js';
import { DEFAULT_SLOW_READER_LIMITS, guardSlowReader, type SlowReaderLimits } from '../shared/slow-reader.js';
import type { Tool } from '../tools/tool.js';
import { NodeMcpTransport } from './http-transport.js';
import { MAX_MESSAGE_BYTES } from './line-limit.js';
import { createMcpServer, inToolsets, type McpServerDeps } from './server.js';
import { McpSessions, sessionCaller, sessionComputer } from './sessions.js';

/** An OAuth grant a request was admitted with: its calls are `mcp:<client>:<session>`. */
export interface McpGrant {
  id: string;
  /** Paddock's id of the client (the audit caller names it). */
  client: string;
  /** Tool sets the grant's scopes open. */
  toolsets: readonly string[];
}

interface Session {
  transport: NodeMcpTransport;
  dispose(): void;
  lastSeen: number;
  /** The grant that opened the session; only requests of that grant may use it. */
  grantId?: string;
}

export interface McpHttpOptions {
  /** Most sessions kept at once; the least recently used is closed past it. */
  maxSessions?: number;
  /** A session unused this long is closed. */
  idleTimeoutMs?: number;
  /** Body size limit for one POST. */
  maxBodyBytes?: number;
  /** How long the whole body of one POST may take to arrive (a body that never ends is cut). */
  bodyTimeoutMs?: number;
  /** The server's session list (for `paddock status` and the end-of-session hook). */
  sessions?: McpSessions;
  /**
   * Which of these grants were revoked (also by another process, e.g. `paddock clients
   * revoke`): their sessions are closed within `grantCheckMs`.
   */
  revokedGrants?: (grantIds: string[]) => Promise<string[]>;
  /** How often sessions of OAuth grants are checked against revocations. Default 2 s. */
  grantCheckMs?: number;
  /** Bounds for a client that leaves a response stream (POST or the GET SSE stream) unread. */
  slowReader?: SlowReaderLimits;
}

/** Header that attaches an HTTP session to a named computer instead of its private one. */
export const COMPUTER_HEADER = 'paddock-computer';

/**
 * Streamable HTTP endpoint (`/mcp`) with sessions: one MCP server instance per session,
 * each session a caller `mcp:<session id>`. Authentication, Host and Origin checks
 * happen in the web app before a request reaches this handler.
 */
export class McpHttpEndpoint {
  private readonly sessions = new Map<string, Session>();
  private readonly maxSessions: number;
  private readonly idleTimeoutMs: number;
  private readonly maxBodyBytes: number;
  private readonly bodyTimeoutMs: number;
  private readonly sweeper: NodeJS.Timeout;
  private readonly registry: McpSessions;
  private readonly grantChecker: NodeJS.Timeout | undefined;
  private readonly slowReader: SlowReaderLimits;

  constructor(
    private readonly deps: McpServerDeps,
    private readonly logger: Logger,
    options: McpHttpOptions = {},
  ) {
    this.maxSessions = options.maxSessions ?? 256;
    this.idleTimeoutMs = options.idleTimeoutMs ?? 30 * 60_000;
    this.maxBodyBytes = options.maxBodyBytes ?? MAX_MESSAGE_BYTES;
    this.bodyTimeoutMs = options.bodyTimeoutMs ?? 30_000;
    this.registry = options.sessions ?? new McpSessions();
    this.slowReader = options.slowReader ?? DEFAULT_SLOW_READER_LIMITS;
    this.sweeper = setInterval(() => this.sweep(), 60_000);
    this.sweeper.unref();
    const revoked = options.revokedGrants;
    if (revoked) {
      this.grantChecker = setInterval(() => {
        const ids = [...new Set([...this.sessions.values()].flatMap((s) => (s.grantId ? [s.grantId] : [])))];
        if (ids.length === 0) return;
        revoked(ids).then(
          (gone) => this.closeGrants(gone),
          (e: unknown) => this.logger.warn('mcp.grant_check_failed', { error: (e as Error).message }),
        );
      }, options.grantCheckMs ?? 2_000);
      this.grantChecker.unref();
    }
  }

  /** Closes every session opened by one of these grants (they were revoked). */
  closeGrants(grantIds: readonly string[]): void {
    if (grantIds.length === 0) return;
    for (const [id, s] of this.sessions) {
      if (s.grantId && grantIds.includes(s.grantId)) {
        this.logger.info('mcp.session_revoked', { session: id, grant: s.grantId });
        void s.transport.close();
      }
    }
  }

  get sessionCount(): number {
    return this.sessions.size;
  }

  /** Serves one request; `grant` when it was admitted with an OAuth access token. */
  async handle(req: IncomingMessage, res: ServerResponse, grant?: McpGrant): Promise<void> {
    const sessionId = header(req, 'mcp-session-id');
    // a response the client leaves unread (a POST's stream, the GET SSE stream) is cut off
    guardSlowReader(res, this.slowReader, (drop) =>
      this.logger.warn('mcp.peer_dropped', { session: sessionId ?? null, transport: 'http', ...drop }),
    );
    if (sessionId) {
      const session = this.sessions.get(sessionId);
      if (session && session.grantId !== grant?.id) {
        return sendJsonRpcError(
          res,
          403,
          -32000,
          'This session was opened with other credentials; send initialize to open your own.',
        );
      }
      if (!session) {
        return sendJsonRpcError(
          res,
          404,
          -32001,
          'Session not found: it expired or the server restarted. Start a new session with initialize.',
        );
      }
      session.lastSeen = Date.now();
      const body =
        req.method === 'POST' ? await readJson(req, res, this.maxBodyBytes, this.bodyTimeoutMs) : undefined;
      if (body === INVALID) return;
      await session.transport.handleRequest(req, res, body);
      return;
    }
    if (req.method !== 'POST') {
      return sendJsonRpcError(
        res,
        400,
        -32000,
        'Missing Mcp-Session-Id header: send initialize first to open a session.',
      );
    }
    const body = await readJson(req, res, this.maxBodyBytes, this.bodyTimeoutMs);
    if (body === INVALID) return;
    if (!isInitializeRequest(body)) {
      return sendJsonRpcError(
        res,
        400,
        -32000,
        'No session: the first request must be initialize (then send Mcp-Session-Id).',
      );
    }
    const named = header(req, COMPUTER_HEADER);
    const problem = named === undefined ? null : computerNameProblem(named);
    if (problem) return sendJsonRpcError(res, 400, -32602, `${problem} (header Paddock-Computer)`);
    this.evictIfFull();
    const id = randomUUID();
    const ref = sessionComputer(id, named);
    const scopes = grant?.toolsets;
    const caller = grant ? `mcp:${grant.client}:${id}` : `mcp:${id}`;
    const { server, dispose } = createMcpServer(this.deps, () => ({
      ...sessionCaller(id, ref),
      caller,
      ...(scopes
        ? { allowTool: (_name: string, tool: Tool) => scopes.length > 0 && inToolsets(tool, scopes) }
        : {}),
    }));
    let end = () => {};
    const transport = new NodeMcpTransport({
      sessionId: id,
      onSessionInitialized: () => {
        this.sessions.set(id, {
          transport,
          dispose,
          lastSeen: Date.now(),
          ...(grant ? { grantId: grant.id } : {}),
        });
        end = this.registry.add(id, 'http', ref);
        this.logger.info('mcp.session_opened', {
          session: id,
          transport: 'http',
          computer: ref,
          ...(grant ? { client: grant.client, grant: grant.id } : {}),
        });
      },
    });
    server.oninitialized = () => {
      const client = server.getClientVersion();
      if (client) this.registry.setClient(id, `${client.name} ${client.version}`);
    };
    transport.onclose = () => {
      if (this.sessions.delete(id))
        this.logger.info('mcp.session_closed', { session: id, transport: 'http' });
      end();
      dispose();
    };
    await server.connect(transport);
    await transport.handleRequest(req, res, body);
  }

  async close(): Promise<void> {
    clearInterval(this.sweeper);
    clearInterval(this.grantChecker);
    const all = [...this.sessions.values()];
    this.sessions.clear();
    await Promise.allSettled(all.map((s) => s.transport.close()));
  }

  private evictIfFull(): void {
    if (this.sessions.size < this.maxSessions) return;
    let oldest: [string, Session] | undefined;
    for (const entry of this.sessions) if (!oldest || entry[1].lastSeen < oldest[1].lastSeen) oldest = entry;
    if (oldest) void oldest[1].transport.close();
  }

  private sweep(): void {
    const cutoff = Date.now() - this.idleTimeoutMs;
    for (const s of this.sessions.values()) if (s.lastSeen < cutoff) void s.transport.close();
  }
}

const INVALID = Symbol('invalid');

function header(req: IncomingMessage, name: string): string | undefined {
  const v = req.headers[name];
  return Array.isArray(v) ? v[0] : v;
}

function readJson(
  req: IncomingMessage,
  res: ServerResponse,
  maxBytes: number,
  timeoutMs: number,
): Promise<unknown | typeof INVALID> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let size = 0;
    // a body that never ends: answer 408, then drop the connection (which ends the read below)
    const timer = setTimeout(() => {
      res.setHeader('connection', 'close');
      sendJsonRpcError(
        res,
        408,
        -32600,
        `The request body did not arrive within ${timeoutMs} ms; send the whole message at once.`,
      );
      res.once('finish', () => req.destroy());
    }, timeoutMs);
    const settle = (value: unknown) => {
      clearTimeout(timer);
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onError);
      req.off('close', onError);
      resolve(value);
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size <= maxBytes) {
        chunks.push(chunk);
        return;
      }
      sendJsonRpcError(res, 413, -32600, `Request body over ${maxBytes} bytes; send smaller requests.`);
      settle(INVALID);
      req.destroy();
    };
    const onEnd = () => {
      if (res.headersSent) return settle(INVALID);
      try {
        const text =
          chunks.length === 1 ? chunks[0]!.toString('utf8') : Buffer.concat(chunks).toString('utf8');
        settle(JSON.parse(text));
      } catch {
        sendJsonRpcError(
          res,
          400,
          -32700,
          'The body is not valid JSON; send one JSON-RPC message or a batch.',
        );
        settle(INVALID);
      }
    };
    const onError = () => settle(INVALID);
    req.on('data', onData);
    req.once('end', onEnd);
    req.once('error', onError);
    req.once('close', onError);
  });
}

/** Answers with a JSON-RPC error body and the given HTTP status. */
export function sendJsonRpcError(res: ServerResponse, status: number, code: number, message: string): void {
  if (res.headersSent) return;
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify({ jsonrpc: '2.0', error: { code, message }, id: null }));
}
