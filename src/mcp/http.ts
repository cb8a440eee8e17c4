import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import {
  classifyInboundRequest,
  isInitializeRequest,
  PROTOCOL_VERSION_META_KEY,
} from '@modelcontextprotocol/server';
import { computerNameProblem } from '../shared/computer-name.js';
import type { Logger } from '../shared/logger.js';
import { principalKey } from '../shared/principal.js';
import { DEFAULT_SLOW_READER_LIMITS, guardSlowReader, type SlowReaderLimits } from '../shared/slow-reader.js';
import type { Tool } from '../tools/tool.js';
import { type McpGrant, principalOfGrant } from './grant.js';
import { header, INVALID, optional, readJson, sendJsonRpcError } from './http-body.js';
import { ModernMcpHttp } from './http-modern.js';
import { NodeMcpTransport } from './http-transport.js';
import { MAX_MESSAGE_BYTES } from './line-limit.js';
import { createMcpServer, inToolsets, type McpServerDeps } from './server.js';
import { makeRoom, type RoomSession, type SessionQuotas } from './session-room.js';
import { McpSessions, sessionCaller, sessionComputer } from './sessions.js';

export type { McpGrant, SessionQuotas };
export { principalOfGrant, sendJsonRpcError };

interface Session extends RoomSession {
  transport: NodeMcpTransport;
  dispose(): void;
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
  /** How often sessions of OAuth grants are checked against revocations. Default 500 ms. */
  grantCheckMs?: number;
  /**
   * Told the OAuth clients whose sessions a revocation seen in the store closed (revoked by
   * another process sharing the store): everything else of them must end too.
   */
  onClientsRevoked?: (clientIds: string[]) => void;
  /** Bounds for a client that leaves a response stream (POST or the GET SSE stream) unread. */
  slowReader?: SlowReaderLimits;
  /** Per-principal session quotas; without them every client may use every free session. */
  quotas?: SessionQuotas;
}

/** Header that attaches an HTTP session to a named computer instead of its private one. */
export const COMPUTER_HEADER = 'paddock-computer';

/**
 * Streamable HTTP endpoint (`/mcp`) of both protocol eras. A 2025-era client opens a session
 * (one MCP server instance per session, each session a caller `mcp:<session id>`); a 2026-era
 * request carries its `_meta` envelope instead and is served on its own (ModernMcpHttp).
 * Authentication, Host and Origin checks happen in the web app before a request reaches this
 * handler, and every POST body is read under the same size and time bounds whatever its era.
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
  private readonly quotas: SessionQuotas | undefined;
  private readonly modern: ModernMcpHttp | undefined;

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
    this.quotas = options.quotas;
    this.modern = deps.modern ? new ModernMcpHttp(deps, logger, this.maxBodyBytes) : undefined;
    this.sweeper = setInterval(() => this.sweep(), 60_000);
    this.sweeper.unref();
    const revoked = options.revokedGrants;
    if (revoked) {
      this.grantChecker = setInterval(() => {
        const ids = [...new Set([...this.sessions.values()].flatMap((s) => (s.grantId ? [s.grantId] : [])))];
        if (ids.length === 0) return;
        revoked(ids).then(
          (gone) => {
            const clients = this.closeGrants(gone);
            if (clients.length > 0) options.onClientsRevoked?.(clients);
          },
          (e: unknown) => this.logger.warn('mcp.grant_check_failed', { error: (e as Error).message }),
        );
      }, options.grantCheckMs ?? 500);
      this.grantChecker.unref();
    }
  }

  /** Closes every session opened by one of these grants (they were revoked); the clients they were of. */
  closeGrants(grantIds: readonly string[]): string[] {
    const clients = new Set<string>();
    if (grantIds.length === 0) return [];
    for (const [id, s] of this.sessions) {
      if (s.grantId && grantIds.includes(s.grantId)) {
        this.logger.info('mcp.session_revoked', { session: id, grant: s.grantId });
        if (s.principal.kind === 'client') clients.add(s.principal.id);
        void s.transport.close();
      }
    }
    return [...clients];
  }

  /**
   * Closes every session of OAuth client `clientId` (revoked) and cancels its background calls
   * (2026-era approvals and tasks); how many sessions there were.
   */
  closeClient(clientId: string): number {
    this.deps.modern?.calls.cancelPrincipal(`client:${clientId}`);
    let closed = 0;
    for (const [id, s] of this.sessions) {
      if (s.principal.kind !== 'client' || s.principal.id !== clientId) continue;
      this.logger.info('mcp.session_revoked', { session: id, client: clientId });
      void s.transport.close();
      closed++;
    }
    return closed;
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
    if (sessionId) return this.continueSession(sessionId, req, res, grant);
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
    const named = header(req, COMPUTER_HEADER);
    const problem = named === undefined ? null : computerNameProblem(named);
    if (problem) return sendJsonRpcError(res, 400, -32602, `${problem} (header Paddock-Computer)`);
    if (this.modern && this.isModern(req, body)) {
      return this.modern.handle(req, res, body, {
        principal: principalOfGrant(grant),
        ...(named === undefined ? {} : { computer: named }),
        ...(grant ? { scopes: grant.toolsets } : {}),
      });
    }
    if (!isInitializeRequest(body)) {
      return sendJsonRpcError(
        res,
        400,
        -32000,
        'No session: the first request must be initialize (then send Mcp-Session-Id).',
      );
    }
    await this.openSession(req, res, body, grant, named);
  }

  /** A request of an open 2025-era session: only the grant that opened it may use it. */
  private async continueSession(
    sessionId: string,
    req: IncomingMessage,
    res: ServerResponse,
    grant: McpGrant | undefined,
  ): Promise<void> {
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
    // the grant's scopes are read at every request: a computer granted or withdrawn in the
    // dock applies from the session's next request on
    if (grant) session.principal = principalOfGrant(grant);
    const body =
      req.method === 'POST' ? await readJson(req, res, this.maxBodyBytes, this.bodyTimeoutMs) : undefined;
    if (body === INVALID) return;
    await session.transport.handleRequest(req, res, body);
    return;
  }

  /** An initialize without a session: opens one if the principal has room for it. */
  private async openSession(
    req: IncomingMessage,
    res: ServerResponse,
    body: unknown,
    grant: McpGrant | undefined,
    named: string | undefined,
  ): Promise<void> {
    const principal = principalOfGrant(grant);
    const refusal = makeRoom(this.sessions, principal, this.maxSessions, this.quotas, (id, key, why) => {
      this.logger.info('mcp.session_evicted', { session: id, principal: key, limit: why });
      // closing takes it out of the map at once
      void this.sessions.get(id)?.transport.close();
    });
    if (refusal) {
      this.logger.warn('mcp.session_refused', { principal: principalKey(principal), limit: refusal.setting });
      return sendJsonRpcError(res, 429, -32000, refusal.message, {
        code: 'LIMIT_EXCEEDED',
        limit: refusal.setting,
        max: refusal.max,
      });
    }
    const id = randomUUID();
    const scopes = grant?.toolsets;
    const caller = grant ? `mcp:${grant.client}:${id}` : `mcp:${id}`;
    const ref = sessionComputer(id, named, caller);
    let end = () => {};
    const transport = new NodeMcpTransport({
      sessionId: id,
      onSessionInitialized: () => {
        end = this.registry.add(id, 'http', ref, principal, caller);
        this.logger.info('mcp.session_opened', {
          session: id,
          transport: 'http',
          computer: ref,
          principal: principalKey(principal),
          ...(grant ? { client: grant.client, grant: grant.id } : {}),
        });
      },
    });
    const { server, dispose } = createMcpServer(this.deps, () => ({
      ...sessionCaller(id, ref, session.principal, caller),
      ...(scopes
        ? { allowTool: (_name: string, tool: Tool) => scopes.length > 0 && inToolsets(tool, scopes) }
        : {}),
    }));
    // the session holds its place from now on (concurrent initializes count against the quota)
    const session: Session = {
      transport,
      dispose,
      lastSeen: Date.now(),
      ...(grant ? { grantId: grant.id } : {}),
      principal,
    };
    this.sessions.set(id, session);
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
    // an initialize the transport refused (in a batch, say) opened nothing: give the place back
    if (transport.sessionId === undefined && this.sessions.get(id) === session) {
      this.sessions.delete(id);
      dispose();
    }
  }

  /**
   * Whether a sessionless POST belongs to the 2026 era: it carries the `_meta` envelope claim,
   * or is a malformed attempt at one (the 2026 leg answers those with the specification's errors).
   * A plain 2026 request (one message with the claim, not `initialize`) is routed on that
   * alone, and the 2026 leg classifies it fully; anything else that looks 2026 in any part is
   * classified here by the SDK's own predicate, so both legs agree.
   */
  private isModern(req: IncomingMessage, body: unknown): boolean {
    const version = header(req, 'mcp-protocol-version');
    const single = !Array.isArray(body);
    if (single && claimsEnvelope(body) && (body as { method?: unknown }).method !== 'initialize') return true;
    if (!(version?.startsWith('2026') || (single ? claimsEnvelope(body) : body.some(claimsEnvelope))))
      return false;
    const route = classifyInboundRequest({
      httpMethod: 'POST',
      body,
      ...optional('protocolVersionHeader', version),
      ...optional('mcpMethodHeader', header(req, 'mcp-method')),
      ...optional('mcpNameHeader', header(req, 'mcp-name')),
    });
    return route.kind !== 'legacy';
  }

  async close(): Promise<void> {
    await this.modern?.close();
    clearInterval(this.sweeper);
    clearInterval(this.grantChecker);
    const all = [...this.sessions.values()];
    this.sessions.clear();
    await Promise.allSettled(all.map((s) => s.transport.close()));
  }

  private sweep(): void {
    const cutoff = Date.now() - this.idleTimeoutMs;
    for (const s of this.sessions.values()) if (s.lastSeen < cutoff) void s.transport.close();
  }
}

/** Whether a message's `params._meta` names a protocol version (the 2026 envelope claim). */
function claimsEnvelope(message: unknown): boolean {
  const params = (message as { params?: { _meta?: Record<string, unknown> } } | null)?.params;
  return typeof params?._meta?.[PROTOCOL_VERSION_META_KEY] === 'string';
}
