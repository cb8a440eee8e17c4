import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { isInitializeRequest } from '@modelcontextprotocol/server';
import { computerNameProblem } from '../shared/computer-name.js';
import type { Logger } from '../shared/logger.js';
import { type ClientPrincipal, OWNER, type Principal, principalKey } from '../shared/principal.js';
import { DEFAULT_SLOW_READER_LIMITS, guardSlowReader, type SlowReaderLimits } from '../shared/slow-reader.js';
import type { Tool } from '../tools/tool.js';
import { INVALID, readJson, sendJsonRpcError } from './http-body.js';
import { NodeMcpTransport } from './http-transport.js';
import { MAX_MESSAGE_BYTES } from './line-limit.js';
import { createMcpServer, inToolsets, type McpServerDeps } from './server.js';
import { McpSessions, sessionCaller, sessionComputer } from './sessions.js';

export { sendJsonRpcError };

/** An OAuth grant a request was admitted with: its calls are `mcp:<client>:<session>`. */
export interface McpGrant {
  id: string;
  /** Paddock's id of the client (the audit caller names it). */
  client: string;
  /** The name the client registered (the principal's display name). */
  clientName: string;
  /** Tool sets the grant's scopes open. */
  toolsets: readonly string[];
  /** Named computers the grant opens (`computer:<name>` scopes). */
  computers: readonly string[];
}

/** The principal of a request admitted with `grant` (the owner without one). */
export function principalOfGrant(grant: McpGrant | undefined): Principal {
  if (!grant) return OWNER;
  const client: ClientPrincipal = {
    kind: 'client',
    id: grant.client,
    name: grant.clientName,
    computers: grant.computers,
  };
  return client;
}

interface Session {
  transport: NodeMcpTransport;
  dispose(): void;
  lastSeen: number;
  /** The grant that opened the session; only requests of that grant may use it. */
  grantId?: string;
  /** Whose session it is; a client's is renewed from its grant at every request (scopes change). */
  principal: Principal;
}

/** How many `/mcp` sessions each principal may hold (see `principals` in paddock.yaml). */
export interface SessionQuotas {
  /** Sessions one OAuth client may hold at once. */
  perClient: number;
  /** Sessions of the server's total that only the owner may use. */
  ownerReserve: number;
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
  private readonly quotas: SessionQuotas | undefined;

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

  /** Closes every session of OAuth client `clientId` (revoked); how many there were. */
  closeClient(clientId: string): number {
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
      // the grant's scopes are read at every request: a computer granted or withdrawn in the
      // dock applies from the session's next request on
      if (grant) session.principal = principalOfGrant(grant);
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
    const principal = principalOfGrant(grant);
    const refusal = this.makeRoom(principal);
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

  async close(): Promise<void> {
    clearInterval(this.sweeper);
    clearInterval(this.grantChecker);
    const all = [...this.sessions.values()];
    this.sessions.clear();
    await Promise.allSettled(all.map((s) => s.transport.close()));
  }

  /**
   * Makes room for a new session of `principal`, or says which limit refuses it. A client that
   * holds its quota (`principals.clients.maxSessions`) gives up its own least recently used
   * session; the sessions outside the owner's reserve are shared by all clients, and when they
   * are taken a client is refused. The owner may use every session, and when all are taken its
   * own least recently used one is closed. Nobody's session is ever closed to make room for
   * another principal.
   */
  private makeRoom(principal: Principal): { setting: string; max: number; message: string } | null {
    const quotas = this.quotas;
    if (principal.kind === 'client' && quotas) {
      const key = principalKey(principal);
      let own = 0;
      let thirdParty = 0;
      for (const s of this.sessions.values()) {
        if (s.principal.kind === 'owner') continue;
        thirdParty++;
        if (principalKey(s.principal) === key) own++;
      }
      if (own >= quotas.perClient) {
        if (this.closeOldestOf(key, 'principals.clients.maxSessions')) return null;
        return {
          setting: 'principals.clients.maxSessions',
          max: quotas.perClient,
          message: `LIMIT_EXCEEDED: this client already opens ${own} sessions at once, its limit principals.clients.maxSessions (${quotas.perClient}). Wait for them to open, close those you no longer use (HTTP DELETE with their Mcp-Session-Id), and retry.`,
        };
      }
      const shared = Math.max(0, this.maxSessions - quotas.ownerReserve);
      if (thirdParty >= shared) {
        return {
          setting: 'principals.ownerReserve.sessions',
          max: shared,
          message: `LIMIT_EXCEEDED: the sessions open to clients are all taken (${shared}; principals.ownerReserve.sessions keeps the rest of the server's ${this.maxSessions} for the owner). Close sessions you no longer use (HTTP DELETE with their Mcp-Session-Id) and retry later.`,
        };
      }
    }
    if (this.sessions.size < this.maxSessions) return null;
    if (this.closeOldestOf(principalKey(principal), 'server sessions')) return null;
    return {
      setting: 'server sessions',
      max: this.maxSessions,
      message: `LIMIT_EXCEEDED: this server holds its most sessions (${this.maxSessions}); retry once one ends.`,
    };
  }

  /**
   * Closes the least recently used open session of principal `key` (why: the limit it makes
   * room under); one still being initialized is never closed. Whether one was.
   */
  private closeOldestOf(key: string, why: string): boolean {
    let oldest: [string, Session] | undefined;
    for (const entry of this.sessions) {
      if (principalKey(entry[1].principal) !== key || entry[1].transport.sessionId === undefined) continue;
      if (!oldest || entry[1].lastSeen < oldest[1].lastSeen) oldest = entry;
    }
    if (!oldest) return false;
    this.logger.info('mcp.session_evicted', { session: oldest[0], principal: key, limit: why });
    // closing takes it out of the map at once
    void oldest[1].transport.close();
    return true;
  }

  private sweep(): void {
    const cutoff = Date.now() - this.idleTimeoutMs;
    for (const s of this.sessions.values()) if (s.lastSeen < cutoff) void s.transport.close();
  }
}

function header(req: IncomingMessage, name: string): string | undefined {
  const v = req.headers[name];
  return Array.isArray(v) ? v[0] : v;
}
