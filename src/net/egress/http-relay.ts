/**
 * Relaying one HTTP request upstream and its response back (plain forward requests and
 * requests inside a terminated tunnel), with hop-by-hop headers dropped, bytes counted, an idle
 * bound, and the row written when the response ends.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { request } from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import type { ConnectionRecord } from './connection-log.js';
import type { EgressTarget } from './decide.js';
import type { EgressSession } from './types.js';
import { connectFailure, idleGuard } from './upstream.js';

/** Hop-by-hop headers: never forwarded either way. */
const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-authorization',
  'proxy-authenticate',
  'proxy-connection',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
]);

export function endToEnd(headers: IncomingMessage['headers']): Record<string, string | string[]> {
  const listed = new Set(
    String(headers.connection ?? '')
      .split(',')
      .map((h) => h.trim().toLowerCase())
      .filter(Boolean),
  );
  const out: Record<string, string | string[]> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined || HOP_BY_HOP.has(name) || listed.has(name)) continue;
    out[name] = value;
  }
  return out;
}

/** `host:port` of a CONNECT line (`[v6]:port` too); null when malformed. */
export function parseAuthority(text: string): EgressTarget | null {
  const m = /^(\[[0-9A-Fa-f:.]+\]|[^\s:[\]/@]+):(\d{1,5})$/.exec(text);
  if (!m) return null;
  const port = Number(m[2]);
  if (port < 1 || port > 65535) return null;
  return {
    host: m[1]!
      .replace(/^\[|\]$/g, '')
      .toLowerCase()
      .replace(/\.$/, ''),
    port,
  };
}

/** Sends one request upstream and its response back, counting bytes; writes the row at the end. */
export async function relayRequest(
  session: EgressSession,
  req: IncomingMessage,
  res: ServerResponse,
  record: ConnectionRecord,
  rule: string,
  touch: () => void,
  open: () => Promise<{ socket: Duplex; headers: Record<string, string | string[]>; path: string }>,
): Promise<void> {
  const fail = (status: number, code: string, message: string) => {
    record.finish({ success: false, rule, errorCode: code, errorMessage: message });
    if (res.headersSent) res.destroy();
    else {
      res.writeHead(status, { 'content-type': 'text/plain; charset=utf-8', connection: 'close' });
      res.end(`${message}\n`);
    }
  };
  let target: Awaited<ReturnType<typeof open>>;
  try {
    target = await open();
  } catch (e) {
    const failure = connectFailure(e, record.host, record.port);
    fail(failure.code === 'TIMEOUT' ? 504 : 502, failure.code, failure.message);
    return;
  }
  const up = request({
    method: req.method,
    path: target.path,
    headers: target.headers,
    createConnection: () => target.socket as Socket,
    setHost: false,
  });
  const guard = idleGuard(session.limits.idleTimeoutMs, () => {
    up.destroy();
    fail(
      504,
      'TIMEOUT',
      `Paddock egress: ${record.host}:${record.port} sent nothing for ${session.limits.idleTimeoutMs} ms; the connection was closed.`,
    );
  });
  const active = () => {
    guard.touch();
    touch();
  };
  req.on('data', (chunk: Buffer) => {
    record.bytesSent += chunk.length;
    active();
  });
  up.on('error', (e) => {
    guard.stop();
    fail(502, 'UPSTREAM_ERROR', `Paddock egress: ${record.host}:${record.port} failed: ${e.message}.`);
  });
  up.on('response', (upRes) => {
    active();
    res.writeHead(upRes.statusCode ?? 502, upRes.statusMessage, endToEnd(upRes.headers));
    upRes.on('data', (chunk: Buffer) => {
      record.bytesReceived += chunk.length;
      active();
    });
    upRes.on('end', () => {
      guard.stop();
      record.finish({ success: true, rule });
    });
    upRes.on('error', () => {
      guard.stop();
      fail(502, 'UPSTREAM_ERROR', `Paddock egress: ${record.host}:${record.port} broke off the response.`);
    });
    upRes.pipe(res);
  });
  res.on('close', () => {
    if (!res.writableFinished) {
      guard.stop();
      up.destroy();
      record.finish({
        success: false,
        rule,
        errorCode: 'UPSTREAM_ERROR',
        errorMessage: 'the program closed the connection before the response ended',
      });
    }
  });
  req.pipe(up);
}
