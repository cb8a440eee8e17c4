/**
 * The HTTP side of the egress proxy: absolute-URI requests (`GET http://host/path`), each
 * decided and audited on its own, and `CONNECT host:port` tunnels. A CONNECT to a domain with
 * an inject rule is terminated here (TLS with a certificate of the data directory's CA) so the
 * headers can be added; every other CONNECT is a byte tunnel and its TLS is never opened.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { TLSSocket, connect as tlsConnect } from 'node:tls';
import { ConnectionRecord, type EgressKind, refusalOf, UNAUDITED } from './connection-log.js';
import { closeSignal, decideEgress, type EgressTarget } from './decide.js';
import { endToEnd, parseAuthority, relayRequest } from './http-relay.js';
import { injectedHeaders } from './inject.js';
import { parseBasicCredentials, plainResponse } from './proxy-answers.js';
import type { EgressPrincipal, EgressSession } from './types.js';
import { connectFailure, connectPinned, idleGuard, tunnel } from './upstream.js';

interface Terminated {
  principal: EgressPrincipal | null;
  /** `name` when the program connected to a handed-out name (no proxy). */
  route?: unknown;
  host: string;
  port: number;
  addresses: string[];
  rule: string;
  touch: () => void;
}

type Principal = { ok: true; principal: EgressPrincipal } | { ok: false; message: string };

/** Writes a plain-text answer on `res` (or drops the connection once a response started). */
export function plainSender(res: ServerResponse) {
  return (status: number, text: string, headers: Record<string, string> = {}) => {
    if (res.headersSent) {
      res.destroy();
      return;
    }
    res.writeHead(status, { 'content-type': 'text/plain; charset=utf-8', connection: 'close', ...headers });
    res.end(`${text}\n`);
  };
}

export class HttpProxy {
  private readonly server = createServer();
  private readonly inner = createServer();
  private readonly terminated = new WeakMap<object, Terminated>();
  private readonly touches = new WeakMap<object, () => void>();

  constructor(
    private readonly session: EgressSession,
    private readonly env: NodeJS.ProcessEnv,
  ) {
    this.server.on('request', (req: IncomingMessage, res: ServerResponse) => void this.forward(req, res));
    this.server.on('connect', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
      void this.connect(req, socket, head);
    });
    this.server.on('upgrade', (_req: IncomingMessage, socket: Duplex) => {
      socket.end(
        plainResponse(
          501,
          'Paddock egress: protocol upgrades over a plain-HTTP proxy request are not relayed; use https:// (CONNECT).',
        ),
      );
    });
    this.server.on('clientError', (error: NodeJS.ErrnoException, socket: Duplex) =>
      this.malformed(error, socket),
    );
    this.inner.on(
      'request',
      (req: IncomingMessage, res: ServerResponse) => void this.forwardTerminated(req, res),
    );
    this.inner.on('clientError', (_e: Error, socket: Duplex) => socket.destroy());
  }

  /** Serves one program connection (its first bytes were HTTP). */
  accept(socket: Duplex): void {
    this.track(socket);
    this.server.emit('connection', socket);
  }

  /**
   * Closes a program connection idle between requests; its activity keeps requests alive.
   * Returns the function that records activity.
   */
  track(socket: Duplex): () => void {
    // between requests; while one is in flight its own guard (below) answers 504 first
    const guard = idleGuard(2 * this.session.limits.idleTimeoutMs, () => socket.destroy());
    socket.on('data', guard.touch);
    socket.once('close', guard.stop);
    this.touches.set(socket, guard.touch);
    return guard.touch;
  }

  private principal(header: string | undefined): Principal {
    const credentials = parseBasicCredentials(header);
    const principal = this.session.principal(credentials);
    if (principal) return { ok: true, principal };
    return {
      ok: false,
      message: credentials
        ? 'Paddock egress: the proxy credentials belong to no running job or terminal of this computer; use the HTTP_PROXY the job was given.'
        : 'Paddock egress: this connection carries no proxy credentials; use the HTTP_PROXY, HTTPS_PROXY or ALL_PROXY the job was given.',
    };
  }

  /** Writes a refusal's row, tells the computer, and answers the program. */
  refuse(
    record: ConnectionRecord,
    write: (status: number, text: string, headers?: Record<string, string>) => void,
    status: number,
    rule: string,
    code: string,
    message: string,
    hint?: string,
  ): void {
    record.finish({ success: false, rule, errorCode: code, errorMessage: message });
    this.session.onRefused(record.principal, message, refusalOf(record, { rule, code, hint }));
    // clients that wait for a challenge (libcurl's anyauth, git) send the credentials after it
    const challenge: Record<string, string> =
      status === 407 ? { 'proxy-authenticate': 'Basic realm="paddock egress"' } : {};
    write(status, message, { 'x-paddock-egress-rule': rule, ...challenge });
  }

  private malformed(error: NodeJS.ErrnoException, socket: Duplex): void {
    if (error.code === 'ECONNRESET' || !socket.writable) {
      socket.destroy();
      return;
    }
    const record = new ConnectionRecord(this.session, 'http', this.session.principal(null), '', 0);
    const message = `Paddock egress: the request is not valid HTTP/1.1 (${error.code ?? 'parse error'}); send "METHOD http://host/path HTTP/1.1" or "CONNECT host:port HTTP/1.1".`;
    record.finish({
      success: false,
      rule: 'request-syntax',
      errorCode: 'INVALID_ARGUMENT',
      errorMessage: message,
    });
    this.session.onRefused(record.principal, message);
    socket.end(plainResponse(400, message));
  }

  /** An absolute-URI request: decided, connected to the vetted address, relayed. */
  private async forward(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const who = this.principal(req.headers['proxy-authorization']);
    let url: URL | null = null;
    try {
      url = new URL(req.url ?? '');
    } catch {
      url = null;
    }
    const host = url ? url.hostname.replace(/^\[|\]$/g, '') : '';
    const port = url ? Number(url.port || 80) : 0;
    const record = new ConnectionRecord(this.session, 'http', who.ok ? who.principal : null, host, port);
    record.details.method = req.method;
    const send = plainSender(res);
    if (!who.ok) {
      this.refuse(record, send, 407, 'proxy-auth', 'PERMISSION_REQUIRED', who.message);
      return;
    }
    if (url?.protocol !== 'http:') {
      const message =
        'Paddock egress: send absolute http:// URLs to this proxy (GET http://host/path), and use CONNECT for https.';
      this.refuse(record, send, 400, 'request-syntax', 'INVALID_ARGUMENT', message);
      return;
    }
    await this.relayPlain(req, res, record, url);
  }

  /**
   * A plain-HTTP request for `url`, its row begun (`record`, with the principal): decided,
   * connected to the vetted address, relayed; a refusal is a 403 with the reason and the fix.
   */
  async relayPlain(
    req: IncomingMessage,
    res: ServerResponse,
    record: ConnectionRecord,
    url: URL,
  ): Promise<void> {
    const send = plainSender(res);
    const { host, port } = record;
    const who = { principal: record.principal! };
    record.details.path = url.pathname.slice(0, 200);
    const decision = await decideEgress({ host, port }, who.principal.scope, true, closeSignal(req.socket));
    if (!decision.allow) {
      const status = decision.code === 'POLICY_DENIED' ? 403 : decision.code === 'TIMEOUT' ? 504 : 502;
      this.refuse(record, send, status, decision.rule, decision.code, decision.message, decision.hint);
      return;
    }
    record.details.addresses = decision.addresses;
    if (!(await record.open())) return send(503, UNAUDITED(host, port));
    const touch = this.touches.get(req.socket) ?? (() => undefined);
    await relayRequest(this.session, req, res, record, decision.rule, touch, async () => {
      const socket = await connectPinned(decision.addresses, port, this.session.limits.connectTimeoutMs);
      return {
        socket,
        headers: { ...endToEnd(req.headers), host: req.headers.host ?? url.host },
        path: `${url.pathname}${url.search}`,
      };
    });
  }

  /** `CONNECT host:port`: a tunnel to the vetted address, or TLS terminated for an inject domain. */
  private async connect(req: IncomingMessage, socket: Duplex, head: Buffer): Promise<void> {
    socket.on('error', () => socket.destroy());
    const write = (status: number, text: string, headers: Record<string, string> = {}) => {
      socket.end(plainResponse(status, text, headers));
    };
    const target = parseAuthority(req.url ?? '');
    const who = this.principal(req.headers['proxy-authorization']);
    const record = new ConnectionRecord(
      this.session,
      'connect',
      who.ok ? who.principal : null,
      target?.host ?? String(req.url ?? '').slice(0, 255),
      target?.port ?? 0,
    );
    if (!who.ok) {
      this.refuse(record, write, 407, 'proxy-auth', 'PERMISSION_REQUIRED', who.message);
      return;
    }
    if (!target) {
      const message = `Paddock egress: "CONNECT ${String(req.url).slice(0, 200)}" is malformed; send CONNECT host:port.`;
      this.refuse(record, write, 400, 'request-syntax', 'INVALID_ARGUMENT', message);
      return;
    }
    const decision = await decideEgress(target, who.principal.scope, true, closeSignal(socket));
    if (!decision.allow) {
      const status = decision.code === 'POLICY_DENIED' ? 403 : decision.code === 'TIMEOUT' ? 504 : 502;
      this.refuse(record, write, status, decision.rule, decision.code, decision.message, decision.hint);
      return;
    }
    record.details.addresses = decision.addresses;
    const touch = this.touches.get(socket) ?? (() => undefined);
    if (this.session.ca && this.session.inject?.has(target.host)) {
      await this.terminate(socket, head, record, target, decision.addresses, decision.rule, touch, true);
      return;
    }
    if (!(await record.open())) return write(503, UNAUDITED(target.host, target.port));
    let upstream: Socket;
    try {
      upstream = await connectPinned(decision.addresses, target.port, this.session.limits.connectTimeoutMs);
    } catch (e) {
      const failure = connectFailure(e, target.host, target.port);
      record.finish({
        success: false,
        rule: decision.rule,
        errorCode: failure.code,
        errorMessage: failure.message,
      });
      write(failure.code === 'TIMEOUT' ? 504 : 502, failure.message);
      return;
    }
    socket.write('HTTP/1.1 200 Connection Established\r\n\r\n');
    if (head.length > 0) {
      record.bytesSent += head.length;
      upstream.write(head);
    }
    // either direction keeps the connection alive (a download sends nothing upstream)
    socket.on('data', touch);
    upstream.on('data', touch);
    tunnel(socket, upstream, this.session.limits.idleTimeoutMs, record, decision.rule);
  }

  /**
   * Terminates TLS for an inject domain (a CONNECT answered first when `connectAnswer`, or a
   * connection to the domain's handed-out name): a certificate of the data directory's CA,
   * then each request inside relayed with the headers added.
   */
  async terminate(
    socket: Duplex,
    head: Buffer,
    record: ConnectionRecord,
    target: EgressTarget,
    addresses: string[],
    rule: string,
    touch: () => void,
    connectAnswer: boolean,
  ): Promise<void> {
    const ca = this.session.ca!;
    record.details.terminated = true;
    if (!(await record.open())) {
      if (connectAnswer) socket.end(plainResponse(503, UNAUDITED(target.host, target.port)));
      else socket.destroy();
      return;
    }
    if (connectAnswer) socket.write('HTTP/1.1 200 Connection Established\r\n\r\n');
    if (head.length > 0) socket.unshift(head);
    const tls = new TLSSocket(socket as Socket, {
      isServer: true,
      secureContext: ca.contextFor(target.host),
    });
    tls.on('error', () => tls.destroy());
    socket.on('data', (chunk: Buffer) => {
      record.bytesSent += chunk.length;
      touch();
    });
    const written = socket.write.bind(socket);
    socket.write = ((chunk: Buffer | string, ...rest: unknown[]) => {
      record.bytesReceived += typeof chunk === 'string' ? Buffer.byteLength(chunk) : chunk.length;
      return (written as (...a: unknown[]) => boolean)(chunk, ...rest);
    }) as typeof socket.write;
    socket.once('close', () => record.finish({ success: true, rule }));
    this.terminated.set(tls, {
      ...(record.details.route ? { route: record.details.route } : {}),
      principal: record.principal,
      host: target.host,
      port: target.port,
      addresses,
      rule,
      touch,
    });
    this.inner.emit('connection', tls);
  }

  /** A request inside a terminated tunnel: same host only, headers injected, sent over TLS. */
  private async forwardTerminated(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const ctx = this.terminated.get(req.socket);
    if (!ctx) {
      res.destroy();
      return;
    }
    const kind: EgressKind = 'https-terminated';
    const record = new ConnectionRecord(this.session, kind, ctx.principal, ctx.host, ctx.port);
    if (ctx.route) record.details.route = ctx.route;
    record.details.method = req.method;
    record.details.path = String(req.url ?? '')
      .split('?', 1)[0]!
      .slice(0, 200);
    const hostHeader = String(req.headers.host ?? '')
      .replace(/:\d+$/, '')
      .toLowerCase();
    if (hostHeader !== ctx.host) {
      const message = `Paddock egress: this tunnel is for ${ctx.host}, not "${hostHeader.slice(0, 200)}"; open a new connection for another host.`;
      record.finish({ success: false, rule: ctx.rule, errorCode: 'POLICY_DENIED', errorMessage: message });
      res.writeHead(421, { 'content-type': 'text/plain; charset=utf-8' });
      res.end(`${message}\n`);
      return;
    }
    let injected: Record<string, string>;
    try {
      injected = injectedHeaders(this.session.inject, ctx.host, this.env) ?? {};
    } catch (e) {
      const message = (e as Error).message;
      record.finish({ success: false, rule: ctx.rule, errorCode: 'UPSTREAM_ERROR', errorMessage: message });
      this.session.onRefused(ctx.principal, message);
      res.writeHead(502, { 'content-type': 'text/plain; charset=utf-8' });
      res.end(`Paddock egress: ${message}\n`);
      return;
    }
    record.details.injected = Object.keys(injected);
    if (!(await record.open())) {
      res.writeHead(503, { 'content-type': 'text/plain; charset=utf-8' });
      res.end(`${UNAUDITED(ctx.host, ctx.port)}\n`);
      return;
    }
    await relayRequest(this.session, req, res, record, ctx.rule, ctx.touch, async () => {
      const tcp = await connectPinned(ctx.addresses, ctx.port, this.session.limits.connectTimeoutMs);
      const secure = tlsConnect({
        socket: tcp,
        servername: ctx.host,
        ...(this.session.upstreamCa ? { ca: this.session.upstreamCa } : {}),
      });
      await new Promise<void>((resolve, reject) => {
        secure.once('secureConnect', resolve);
        secure.once('error', reject);
      });
      const headers = { ...endToEnd(req.headers), ...injected, host: req.headers.host ?? ctx.host };
      return { socket: secure, headers, path: req.url ?? '/' };
    });
  }
}
