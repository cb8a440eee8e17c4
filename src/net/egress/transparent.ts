/**
 * Connections to a name the computer's resolver handed out: the program connected to the name
 * and port directly, with no proxy in mind, and the guest told which name and port it was. Port
 * 80 is plain HTTP and handled like the proxy's absolute-URI requests (each request decided and
 * audited, a refusal is a 403 with its reason); any other port is a TCP connection decided once
 * and tunnelled, except to an inject domain (https by definition), whose TLS is terminated as
 * for CONNECT. TLS
 * stays end to end everywhere else: the bytes are never read.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import { ConnectionRecord, refusalOf, UNAUDITED } from './connection-log.js';
import { closeSignal, decideEgress, type EgressTarget } from './decide.js';
import type { HttpProxy } from './http-proxy.js';
import { plainSender } from './http-proxy.js';
import type { EgressPrincipal, EgressSession } from './types.js';
import { connectFailure, connectPinned, tunnel } from './upstream.js';

interface Direct {
  host: string;
  principal: EgressPrincipal;
}

export class TransparentEgress {
  private readonly direct = createServer();
  private readonly targets = new WeakMap<object, Direct>();

  constructor(
    private readonly session: EgressSession,
    private readonly http: HttpProxy,
  ) {
    this.direct.on('request', (req: IncomingMessage, res: ServerResponse) => void this.request(req, res));
    this.direct.on('upgrade', (_req: IncomingMessage, socket: Duplex) => {
      socket.end(
        'HTTP/1.1 501 Not Implemented\r\ncontent-type: text/plain; charset=utf-8\r\nconnection: close\r\n\r\nPaddock egress: protocol upgrades over plain http are not relayed; use https.\n',
      );
    });
    this.direct.on('clientError', (_e: Error, socket: Duplex) => socket.destroy());
  }

  /** Takes one connection to `target` made by `principal`. */
  handle(socket: Duplex, target: EgressTarget, principal: EgressPrincipal): void {
    socket.on('error', () => socket.destroy());
    if (target.port === 80) {
      this.http.track(socket);
      this.targets.set(socket, { host: target.host, principal });
      this.direct.emit('connection', socket);
      return;
    }
    void this.tcp(socket, target, principal);
  }

  /** A plain-HTTP request to the name: it must be for that name (421 otherwise). */
  private async request(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const direct = this.targets.get(req.socket);
    if (!direct) {
      res.destroy();
      return;
    }
    const { host, principal } = direct;
    const record = new ConnectionRecord(this.session, 'http', principal, host, 80);
    record.details.method = req.method;
    record.details.route = 'name';
    const raw = req.url ?? '/';
    let url: URL | null;
    try {
      url = raw.startsWith('/') ? new URL(`http://${host}${raw}`) : new URL(raw);
    } catch {
      url = null;
    }
    const named = String(req.headers.host ?? host)
      .toLowerCase()
      .replace(/:80$/, '')
      .replace(/\.$/, '');
    if (
      url?.protocol !== 'http:' ||
      url.hostname !== host ||
      named !== host ||
      (url.port && url.port !== '80')
    ) {
      const message = `Paddock egress: this connection is for ${host}:80, not "${String(req.headers.host ?? raw).slice(0, 200)}"; connect to the host you want by its name.`;
      record.finish({
        success: false,
        rule: 'request-syntax',
        errorCode: 'INVALID_ARGUMENT',
        errorMessage: message,
      });
      plainSender(res)(421, message);
      return;
    }
    await this.http.relayPlain(req, res, record, url);
  }

  /** Any other port: decided once, then a tunnel (or terminated TLS for an inject domain on 443). */
  private async tcp(socket: Duplex, target: EgressTarget, principal: EgressPrincipal): Promise<void> {
    // the program speaks first (a TLS hello): hold its bytes until the tunnel or TLS reads them
    socket.pause();
    const record = new ConnectionRecord(this.session, 'tcp', principal, target.host, target.port);
    record.details.route = 'name';
    const decision = await decideEgress(target, principal.scope, false, closeSignal(socket));
    if (!decision.allow) {
      record.finish({
        success: false,
        rule: decision.rule,
        errorCode: decision.code,
        errorMessage: decision.message,
      });
      this.session.onRefused(principal, decision.message, refusalOf(record, decision));
      socket.destroy();
      return;
    }
    record.details.addresses = decision.addresses;
    if (this.session.ca && this.session.inject?.has(target.host)) {
      const touch = this.http.track(socket);
      await this.http.terminate(
        socket,
        Buffer.alloc(0),
        record,
        target,
        decision.addresses,
        decision.rule,
        touch,
        false,
      );
      return;
    }
    // the row and the TCP handshake at once; no byte moves before both are done
    const connecting = connectPinned(
      decision.addresses,
      target.port,
      this.session.limits.connectTimeoutMs,
    ).then(
      (upstream) => ({ upstream }),
      (error: unknown) => ({ error }),
    );
    const [opened, connected] = await Promise.all([record.open(), connecting]);
    if (!opened) {
      if ('upstream' in connected) connected.upstream.destroy();
      this.session.onRefused(principal, UNAUDITED(target.host, target.port));
      socket.destroy();
      return;
    }
    if (!('upstream' in connected)) {
      const failure = connectFailure(connected.error, target.host, target.port);
      record.finish({
        success: false,
        rule: decision.rule,
        errorCode: failure.code,
        errorMessage: failure.message,
      });
      this.session.onRefused(principal, failure.message);
      socket.destroy();
      return;
    }
    const { upstream } = connected;
    tunnel(socket, upstream, this.session.limits.idleTimeoutMs, record, decision.rule);
  }
}
