/**
 * The 2026-07-28 leg of `/mcp`: requests that carry the per-request `_meta` envelope (and the
 * validation errors of malformed ones) are served by the SDK's `createMcpHandler`, modern-only,
 * from the same server definition as the 2025 sessions (`createMcpServer`). There is no
 * session: each request is bound to its principal (the owner, or the OAuth client of its
 * token) and to a computer — the one its `Paddock-Computer` header or `_meta` names, else the
 * principal's own default computer — so a client that makes every call on its own still finds
 * the computer it launched. Authentication, Host and Origin checks happened in the web app, and
 * the body was read under the endpoint's size and time bounds before it got here.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import {
  createMcpHandler,
  type McpHttpHandler,
  type McpRequestContext,
  type Server,
} from '@modelcontextprotocol/server';
import type { Disposable } from '../shared/disposable.js';
import type { Logger } from '../shared/logger.js';
import type { Principal } from '../shared/principal.js';
import type { Tool } from '../tools/tool.js';
import { createMcpServer, inToolsets, type McpServerDeps } from './server.js';
import { modernCaller } from './sessions.js';

/** Who and where one 2026-era request acts, decided before the SDK sees it. */
interface RequestBinding {
  principal: Principal;
  /** The computer the `Paddock-Computer` header names. */
  computer?: string;
  /** Tool sets the request's OAuth grant opens (absent: not limited by a grant). */
  scopes?: readonly string[];
}

/** Serves the 2026-era requests of `/mcp`. */
export class ModernMcpHttp {
  private readonly handler: McpHttpHandler;
  /** The binding of each request in flight, looked up by the factory (the request is the key). */
  private readonly bindings = new WeakMap<Request, RequestBinding>();
  private readonly sub: Disposable;

  constructor(
    private readonly deps: McpServerDeps,
    private readonly logger: Logger,
    maxBodyBytes: number,
  ) {
    this.handler = createMcpHandler((ctx) => this.build(ctx), {
      legacy: 'reject',
      maxRequestBodySize: maxBodyBytes,
      onerror: (e) => this.logger.debug('mcp.modern_refused', { error: e.message }),
    });
    // tool list changes reach 2026 clients on their `subscriptions/listen` streams
    this.sub = deps.registry.onChange(() => this.handler.notify.toolsChanged());
  }

  /** Serves one classified 2026-era POST whose JSON body was already read. */
  async handle(
    req: IncomingMessage,
    res: ServerResponse,
    body: unknown,
    binding: RequestBinding,
  ): Promise<void> {
    const controller = new AbortController();
    // a client that leaves before its answer cancels the call (a finished exchange aborts nothing)
    res.once('close', () => {
      if (!res.writableFinished) controller.abort();
    });
    const headers = new Headers();
    for (const name of FORWARDED) {
      const value = req.headers[name];
      if (typeof value === 'string') headers.set(name, value);
    }
    const request = new Request('http://paddock/mcp', { method: 'POST', headers, signal: controller.signal });
    this.bindings.set(request, binding);
    const response = await this.handler.fetch(request, { parsedBody: body });
    await writeResponse(response, res);
  }

  async close(): Promise<void> {
    this.sub.dispose();
    await this.handler.close();
  }

  private build(ctx: McpRequestContext): Server {
    const binding = ctx.requestInfo ? this.bindings.get(ctx.requestInfo) : undefined;
    if (!binding) throw new Error('A 2026-era request reached the factory without its binding.');
    const scopes = binding.scopes;
    const { server } = createMcpServer(
      this.deps,
      () => ({
        ...modernCaller(binding.principal, binding.computer),
        ...(scopes
          ? { allowTool: (_name: string, tool: Tool) => scopes.length > 0 && inToolsets(tool, scopes) }
          : {}),
      }),
      'modern',
      false,
    );
    return server;
  }
}

/** The request headers the SDK's modern leg reads (the rest, credentials included, stay here). */
const FORWARDED = ['content-type', 'accept', 'mcp-protocol-version', 'mcp-method', 'mcp-name'] as const;

/** Copies a web Response onto the Node response: one write for a JSON body, streamed for SSE. */
async function writeResponse(response: Response, res: ServerResponse): Promise<void> {
  if (res.headersSent || res.destroyed) {
    await response.body?.cancel().catch(() => {});
    return;
  }
  const head: Record<string, string> = {};
  response.headers.forEach((value, key) => {
    head[key] = value;
  });
  if (!response.body) {
    res.writeHead(response.status, head).end();
    return;
  }
  if (!head['content-type']?.startsWith('text/event-stream')) {
    const bytes = Buffer.from(await response.arrayBuffer());
    res.writeHead(response.status, { ...head, 'content-length': String(bytes.length) }).end(bytes);
    return;
  }
  res.writeHead(response.status, head);
  res.flushHeaders();
  const reader = response.body.getReader();
  res.once('close', () => void reader.cancel().catch(() => {}));
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      if (!res.destroyed) res.write(value);
    }
  } catch {
    // the client left: the stream was cancelled
  }
  if (!res.destroyed) res.end();
}
