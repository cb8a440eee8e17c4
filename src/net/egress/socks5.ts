/**
 * SOCKS5 (RFC 1928) for TCP that is not HTTP: CONNECT only, names resolved on the host
 * (`socks5h://`). A request for a raw IPv4 or IPv6 address is decided like an IP literal: refused
 * unless a rule names that address. Username/password authentication (RFC 1929) carries the
 * job's proxy credentials. Refusals are SOCKS replies (a program gets no text; the computer's
 * log has the reason).
 */
import type { Duplex } from 'node:stream';
import { ConnectionRecord, refusalOf } from './connection-log.js';
import { closeSignal, decideEgress, type EgressRefusal } from './decide.js';
import type { EgressPrincipal, EgressSession } from './types.js';
import { connectFailure, connectPinned, tunnel } from './upstream.js';

/** SOCKS5 reply codes. */
export const SOCKS_REPLY = {
  succeeded: 0x00,
  generalFailure: 0x01,
  notAllowed: 0x02,
  networkUnreachable: 0x03,
  hostUnreachable: 0x04,
  connectionRefused: 0x05,
  ttlExpired: 0x06,
  commandNotSupported: 0x07,
  addressTypeNotSupported: 0x08,
} as const;

/** Reads exact byte counts from a stream (the handshake is small and strictly ordered). */
class ByteReader {
  private buffered = Buffer.alloc(0);
  private waiter: (() => void) | null = null;
  private ended = false;

  constructor(private readonly socket: Duplex) {
    const wake = () => {
      const w = this.waiter;
      this.waiter = null;
      w?.();
    };
    this.onData = (chunk: Buffer) => {
      this.buffered = Buffer.concat([this.buffered, chunk]);
      if (this.buffered.length > 4096) socket.destroy();
      wake();
    };
    socket.on('data', this.onData);
    socket.once('close', () => {
      this.ended = true;
      wake();
    });
  }

  private readonly onData: (chunk: Buffer) => void;

  async read(n: number): Promise<Buffer | null> {
    while (this.buffered.length < n) {
      if (this.ended) return null;
      await new Promise<void>((resolve) => {
        this.waiter = resolve;
      });
    }
    const out = this.buffered.subarray(0, n);
    this.buffered = this.buffered.subarray(n);
    return out;
  }

  /** Stops reading; bytes read ahead are handed back to the stream. */
  release(): void {
    this.socket.off('data', this.onData);
    this.socket.pause();
    if (this.buffered.length > 0) this.socket.unshift(this.buffered);
  }
}

function reply(code: number): Buffer {
  return Buffer.from([0x05, code, 0x00, 0x01, 0, 0, 0, 0, 0, 0]);
}

function replyFor(code: EgressRefusal, cause: unknown): number {
  if (code === 'POLICY_DENIED' || code === 'LIMIT_EXCEEDED') return SOCKS_REPLY.notAllowed;
  if (code === 'TIMEOUT') return SOCKS_REPLY.ttlExpired;
  if (code === 'INVALID_ARGUMENT') return SOCKS_REPLY.generalFailure;
  return cause === 'ECONNREFUSED' ? SOCKS_REPLY.connectionRefused : SOCKS_REPLY.hostUnreachable;
}

/**
 * The method negotiation (and RFC 1929 sub-negotiation): the principal, `null` for credentials
 * nobody was given (or none at all), `undefined` when the program broke off or offered no method.
 */
async function authenticate(
  reader: ByteReader,
  socket: Duplex,
  session: EgressSession,
  methods: Buffer,
): Promise<EgressPrincipal | null | undefined> {
  if (methods.includes(0x02)) {
    socket.write(Buffer.from([0x05, 0x02]));
    const head = await reader.read(2);
    const user = head && head[0] === 0x01 ? await reader.read(head[1]!) : null;
    const plen = user ? await reader.read(1) : null;
    const password = plen ? await reader.read(plen[0]!) : null;
    if (!user || !password) return undefined;
    const principal = session.principal({ user: user.toString('utf8'), password: password.toString('utf8') });
    socket.write(Buffer.from([0x01, principal ? 0x00 : 0x01]));
    return principal;
  }
  if (methods.includes(0x00)) {
    const principal = session.principal(null);
    socket.write(Buffer.from([0x05, principal ? 0x00 : 0xff]));
    return principal;
  }
  socket.write(Buffer.from([0x05, 0xff]));
  return undefined;
}

/** Serves one SOCKS5 connection; never throws. */
export async function handleSocks(socket: Duplex, session: EgressSession): Promise<void> {
  const reader = new ByteReader(socket);
  const record = new ConnectionRecord(session, 'socks', null, '', 0);
  const refuse = (code: number, rule: string, errorCode: string, message: string, hint?: string) => {
    record.finish({ success: false, rule, errorCode, errorMessage: message });
    session.onRefused(record.principal, message, refusalOf(record, { rule, code: errorCode, hint }));
    if (socket.writable) socket.end(reply(code));
  };
  const greeting = await reader.read(2);
  if (greeting?.[0] !== 0x05) return void socket.destroy();
  const methods = await reader.read(greeting[1]!);
  if (!methods) return void socket.destroy();
  const principal = await authenticate(reader, socket, session, methods);
  if (!principal) {
    if (principal === null) {
      const message =
        'Paddock egress: the SOCKS connection carries no valid credentials of a running job or terminal of this computer; use the ALL_PROXY the job was given.';
      record.finish({
        success: false,
        rule: 'proxy-auth',
        errorCode: 'PERMISSION_REQUIRED',
        errorMessage: message,
      });
      session.onRefused(null, message);
    }
    socket.end();
    return;
  }
  record.principal = principal;
  const request = await reader.read(4);
  if (request?.[0] !== 0x05) return void socket.destroy();
  let host: string;
  const atyp = request[3];
  if (atyp === 0x01) {
    const a = await reader.read(4);
    if (!a) return void socket.destroy();
    host = [...a].join('.');
  } else if (atyp === 0x04) {
    const a = await reader.read(16);
    if (!a) return void socket.destroy();
    host = (a.toString('hex').match(/.{4}/g) ?? []).join(':');
  } else if (atyp === 0x03) {
    const len = await reader.read(1);
    const name = len ? await reader.read(len[0]!) : null;
    if (!name) return void socket.destroy();
    host = name.toString('latin1').toLowerCase().replace(/\.$/, '');
  } else {
    refuse(
      SOCKS_REPLY.addressTypeNotSupported,
      'request-syntax',
      'INVALID_ARGUMENT',
      'Paddock egress: unknown SOCKS address type.',
    );
    return;
  }
  const portBytes = await reader.read(2);
  if (!portBytes) return void socket.destroy();
  const port = portBytes.readUInt16BE(0);
  record.host = host;
  record.port = port;
  record.details.addressType = atyp === 0x03 ? 'name' : 'ip';
  if (request[1] !== 0x01) {
    refuse(
      SOCKS_REPLY.commandNotSupported,
      'request-syntax',
      'INVALID_ARGUMENT',
      'Paddock egress: only the SOCKS CONNECT command is relayed (no BIND or UDP).',
    );
    return;
  }
  const decision = await decideEgress({ host, port }, principal.scope, false, closeSignal(socket));
  if (!decision.allow) {
    refuse(replyFor(decision.code, null), decision.rule, decision.code, decision.message, decision.hint);
    return;
  }
  record.details.addresses = decision.addresses;
  if (!(await record.open())) {
    socket.end(reply(SOCKS_REPLY.generalFailure));
    return;
  }
  let upstream: Duplex;
  try {
    upstream = await connectPinned(decision.addresses, port, session.limits.connectTimeoutMs);
  } catch (e) {
    const failure = connectFailure(e, host, port);
    record.finish({
      success: false,
      rule: decision.rule,
      errorCode: failure.code,
      errorMessage: failure.message,
    });
    socket.end(reply(replyFor(failure.code, failure.cause)));
    return;
  }
  reader.release();
  socket.write(reply(SOCKS_REPLY.succeeded));
  tunnel(socket, upstream, session.limits.idleTimeoutMs, record, decision.rule);
  socket.resume();
}
