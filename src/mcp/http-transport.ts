/**
 * The server side of MCP Streamable HTTP for one session, written straight on `node:http`.
 * The SDK's Node transport converts every request to a web `Request` and every answer to a web
 * `Response` with a `ReadableStream` behind it, which costs more per call than the call itself
 * for a quick tool. This one writes to the `ServerResponse` it was given: a POST whose requests
 * are all answered before anything else needs saying gets its SSE event in one write with a
 * length; anything sent earlier (progress, an elicitation, a keep-alive comment) opens the event
 * stream and the answers follow on it. The checks and their statuses follow the specification:
 * 406 without the Accept it needs, 415 without a JSON body, 400 for a bad batch, message or
 * protocol version, 404 for another session's id, 409 for a second GET stream.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import {
  isInitializeRequest,
  isJSONRPCNotification,
  isJSONRPCRequest,
  isJSONRPCResponse,
  isJsonContentType,
  type JSONRPCMessage,
  type RequestId,
  SUPPORTED_PROTOCOL_VERSIONS,
  type Transport,
  type TransportSendOptions,
} from '@modelcontextprotocol/server';

/** Most messages one POST may carry. */
export const MAX_BATCH_MESSAGES = 100;

/** How often an open event stream gets a comment line, so proxies keep it open. */
const KEEP_ALIVE_MS = 15_000;

const SSE_HEADERS = {
  'content-type': 'text/event-stream',
  'cache-control': 'no-cache, no-transform',
  connection: 'keep-alive',
  'x-accel-buffering': 'no',
} as const;

/** One response in progress: a POST's answers, or the session's GET stream (no ids). */
interface Stream {
  res: ServerResponse;
  /** Requests of this POST not answered yet. */
  pending: Set<RequestId>;
  /** Whether the response is gone (answered in full, or the client left). */
  done: boolean;
}

export interface NodeMcpTransportOptions {
  /** The id of the session this transport serves, given to the client on initialize. */
  sessionId: string;
  /** Called once, when the initialize request arrives, before it is handled. */
  onSessionInitialized?: () => void;
  /** Interval of keep-alive comments on open event streams (default 15 s; 0 turns them off). */
  keepAliveMs?: number;
}

/**
 * A stateful Streamable HTTP server transport over `node:http` (see the module comment). The
 * caller reads and parses the body (with its own size and time bounds) and passes it in.
 */
export class NodeMcpTransport implements Transport {
  sessionId?: string;
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: Transport['onmessage'];

  private readonly id: string;
  private readonly onSessionInitialized: (() => void) | undefined;
  private readonly streams = new Map<RequestId, Stream>();
  private readonly open = new Set<Stream>();
  private standalone: Stream | undefined;
  private versions: readonly string[] = SUPPORTED_PROTOCOL_VERSIONS;
  private initialized = false;
  private closed = false;
  private readonly keepAlive: NodeJS.Timeout | undefined;

  constructor(options: NodeMcpTransportOptions) {
    this.id = options.sessionId;
    this.onSessionInitialized = options.onSessionInitialized;
    const every = options.keepAliveMs ?? KEEP_ALIVE_MS;
    if (every > 0) {
      this.keepAlive = setInterval(() => {
        for (const s of this.open) this.write(s, ': keepalive\n\n', false);
      }, every);
      this.keepAlive.unref();
    }
  }

  async start(): Promise<void> {}

  setSupportedProtocolVersions(versions: string[]): void {
    this.versions = versions;
  }

  /** Serves one request of this session; `body` is the parsed JSON of a POST. */
  async handleRequest(req: IncomingMessage, res: ServerResponse, body?: unknown): Promise<void> {
    if (this.closed)
      return reply(res, 404, -32001, 'This session is closed; send initialize to open a new one.');
    switch (req.method) {
      case 'POST':
        return this.post(req, res, body);
      case 'GET':
        return this.get(req, res);
      case 'DELETE':
        return this.delete(req, res);
      default:
        res.setHeader('allow', 'GET, POST, DELETE');
        return reply(res, 405, -32000, `${req.method} is not served on /mcp; use POST, GET or DELETE.`);
    }
  }

  async send(message: JSONRPCMessage, options?: TransportSendOptions): Promise<void> {
    const answer = 'id' in message && ('result' in message || 'error' in message);
    const related = answer ? (message as { id: RequestId }).id : options?.relatedRequestId;
    if (related === undefined) {
      if (answer) throw new Error('A response needs the request it answers; it cannot go on the GET stream.');
      if (this.standalone) this.write(this.standalone, event(message), false);
      return;
    }
    const stream = this.streams.get(related);
    if (!stream) throw new Error(`No open request ${String(related)} to send this message with.`);
    if (!answer) {
      if (!stream.done) this.write(stream, event(message), false);
      return;
    }
    this.streams.delete(related);
    stream.pending.delete(related);
    if (stream.done) {
      this.onerror?.(new Error(`The client left before the answer to request ${String(related)} was sent.`));
      return;
    }
    this.write(stream, event(message), stream.pending.size === 0);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    clearInterval(this.keepAlive);
    for (const s of this.open) this.finish(s);
    this.open.clear();
    this.streams.clear();
    this.standalone = undefined;
    this.onclose?.();
  }

  private async post(req: IncomingMessage, res: ServerResponse, body: unknown): Promise<void> {
    const accept = req.headers.accept;
    if (!accept?.includes('application/json') || !accept.includes('text/event-stream')) {
      return reply(res, 406, -32000, 'Send "Accept: application/json, text/event-stream" with every POST.');
    }
    if (!isJsonContentType(req.headers['content-type'] ?? null)) {
      return reply(res, 415, -32000, 'Send the message as "Content-Type: application/json".');
    }
    const messages: unknown[] = Array.isArray(body) ? body : [body];
    if (messages.length > MAX_BATCH_MESSAGES) {
      return reply(res, 400, -32600, `A batch holds at most ${MAX_BATCH_MESSAGES} messages; split it.`);
    }
    const kinds = messages.map(kindOf);
    if (messages.length === 0 || kinds.includes(null)) {
      return reply(res, 400, -32600, 'The body is not a JSON-RPC 2.0 message (or a batch of them).');
    }
    const init = messages.some(
      (m) => (m as { method?: unknown }).method === 'initialize' && isInitializeRequest(m),
    );
    if (init) {
      if (this.initialized) return reply(res, 400, -32600, 'This session is already initialized.');
      if (messages.length > 1) return reply(res, 400, -32600, 'Send initialize alone, not in a batch.');
      this.initialized = true;
      this.sessionId = this.id;
      this.onSessionInitialized?.();
    } else if (!this.sessionOk(req, res)) return;
    const ids: RequestId[] = [];
    for (let i = 0; i < messages.length; i++)
      if (kinds[i] === 'request') ids.push((messages[i] as { id: RequestId }).id);
    if (ids.length === 0) {
      for (const m of messages) this.onmessage?.(m as JSONRPCMessage);
      res.writeHead(202).end();
      return;
    }
    const stream: Stream = { res, pending: new Set(ids), done: false };
    for (const id of ids) this.streams.set(id, stream);
    this.open.add(stream);
    res.once('close', () => this.left(stream));
    for (const m of messages) this.onmessage?.(m as JSONRPCMessage);
  }

  private get(req: IncomingMessage, res: ServerResponse): void {
    if (!req.headers.accept?.includes('text/event-stream')) {
      reply(res, 406, -32000, 'The GET stream is an event stream: send "Accept: text/event-stream".');
      return;
    }
    if (!this.sessionOk(req, res)) return;
    if (this.standalone) {
      reply(res, 409, -32000, 'This session already has a GET stream open; close it first.');
      return;
    }
    const stream: Stream = { res, pending: new Set(), done: false };
    this.standalone = stream;
    this.open.add(stream);
    res.writeHead(200, { ...SSE_HEADERS, 'mcp-session-id': this.id });
    res.flushHeaders();
    res.once('close', () => this.left(stream));
  }

  private async delete(req: IncomingMessage, res: ServerResponse): Promise<void> {
    if (!this.sessionOk(req, res)) return;
    res.writeHead(200).end();
    await this.close();
  }

  /** Checks the session id and protocol version headers; answers the request when they fail. */
  private sessionOk(req: IncomingMessage, res: ServerResponse): boolean {
    if (!this.initialized) {
      reply(res, 400, -32000, 'This session is not initialized yet; send initialize first.');
      return false;
    }
    const id = req.headers['mcp-session-id'];
    if (id === undefined) {
      reply(res, 400, -32000, 'Send the Mcp-Session-Id header that initialize returned.');
      return false;
    }
    if (id !== this.id) {
      reply(res, 404, -32001, 'Session not found; send initialize to open a new one.');
      return false;
    }
    const version = req.headers['mcp-protocol-version'];
    if (typeof version === 'string' && !this.versions.includes(version)) {
      reply(
        res,
        400,
        -32000,
        `Protocol version ${version} is not supported; use one of ${this.versions.join(', ')}.`,
      );
      return false;
    }
    return true;
  }

  /**
   * Writes to a stream. The last write of a POST whose headers are not out yet goes as one
   * response with a length; any other write opens the event stream first.
   */
  private write(stream: Stream, text: string, last: boolean): void {
    const { res } = stream;
    if (stream.done || res.destroyed) return;
    if (!res.headersSent) {
      if (last) {
        res.writeHead(200, {
          ...SSE_HEADERS,
          'mcp-session-id': this.id,
          'content-length': Buffer.byteLength(text),
        });
        res.write(text);
        this.finish(stream);
        return;
      }
      res.writeHead(200, { ...SSE_HEADERS, 'mcp-session-id': this.id });
    }
    res.write(text);
    if (last) this.finish(stream);
  }

  private finish(stream: Stream): void {
    if (stream.done) return;
    stream.done = true;
    this.open.delete(stream);
    if (!stream.res.destroyed) stream.res.end();
  }

  /** The response closed (answered, cut off or dropped by the client). */
  private left(stream: Stream): void {
    stream.done = true;
    this.open.delete(stream);
    if (this.standalone === stream) this.standalone = undefined;
  }
}

/**
 * What a message is, by the SDK's own schemas (the protocol layer classifies it the same way),
 * checked in the order that costs least for a request; null when it is no JSON-RPC message.
 */
function kindOf(m: unknown): 'request' | 'notification' | 'response' | null {
  if (typeof m !== 'object' || m === null || Array.isArray(m)) return null;
  if ('method' in m) {
    if ('id' in m && isJSONRPCRequest(m)) return 'request';
    return isJSONRPCNotification(m) ? 'notification' : null;
  }
  return isJSONRPCResponse(m) ? 'response' : null;
}

function event(message: JSONRPCMessage): string {
  return `event: message\ndata: ${JSON.stringify(message)}\n\n`;
}

function reply(res: ServerResponse, status: number, code: number, message: string): void {
  if (res.headersSent) return;
  const body = JSON.stringify({ jsonrpc: '2.0', error: { code, message }, id: null });
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
  res.end(body);
}
