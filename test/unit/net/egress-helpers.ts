import { mkdtempSync, rmSync } from 'node:fs';
import { type AddressInfo, connect, createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { StoredInvocation } from '../../../src/audit/types.js';
import { policySchema } from '../../../src/config/schema.js';
import { compileNetworkAllow } from '../../../src/net/egress/decide.js';
import { EgressProxy } from '../../../src/net/egress/proxy.js';
import {
  DEFAULT_EGRESS_LIMITS,
  type EgressLimits,
  type EgressPrincipal,
  type EgressSession,
} from '../../../src/net/egress/types.js';
import { createWhitelistSandbox } from '../../../src/policy/index.js';
import type { HostResolver } from '../../../src/policy/types.js';
import { SqliteAuditStore } from '../../../src/store/sqlite/audit-store.js';
import { openDatabase } from '../../../src/store/sqlite/database.js';
import { auditRowsOf } from '../../helpers/audit-rows.js';

/** A proxy on 127.0.0.1 for tests, with a real SQLite audit store. */
export interface TestProxy {
  port: number;
  proxy: EgressProxy;
  audit: SqliteAuditStore;
  refusals: string[];
  rows(): StoredInvocation[];
  close(): Promise<void>;
}

export interface TestProxyOptions {
  allow: string[];
  deny?: string[];
  hosts?: Record<string, string | string[]>;
  networkAllow?: string[];
  dns?: HostResolver;
  limits?: Partial<EgressLimits>;
  /** Credentials a job was given (user → password); without any, a program may send none. */
  jobs?: Record<string, string>;
  session?: Partial<EgressSession>;
}

const NO_DNS: HostResolver = {
  lookup: (host) =>
    Promise.reject(Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: 'ENOTFOUND' })),
};

export async function startTestProxy(options: TestProxyOptions): Promise<TestProxy> {
  const dir = mkdtempSync(join(tmpdir(), 'paddock-egress-'));
  const db = openDatabase(join(dir, 'audit.db'));
  const audit = new SqliteAuditStore(db);
  const policy = createWhitelistSandbox(
    policySchema.parse({
      http: { allow: options.allow, deny: options.deny ?? [], hosts: options.hosts ?? {} },
    }),
  );
  const scope = {
    policy,
    narrow: compileNetworkAllow(options.networkAllow),
    profileId: 'test',
    dns: options.dns ?? NO_DNS,
  };
  const refusals: string[] = [];
  const principal = (user: string): EgressPrincipal => ({
    caller: `test:${user}`,
    via: 'direct',
    parentId: `inv_parent_${user}`,
    jobId: user,
    generation: 1,
    scope,
  });
  const session: EgressSession = {
    principal(credentials) {
      if (!credentials) return options.jobs ? null : principal('anonymous');
      return options.jobs?.[credentials.user] === credentials.password ? principal(credentials.user) : null;
    },
    limits: { ...DEFAULT_EGRESS_LIMITS, ...options.limits },
    audit,
    onRefused: (_p, message) => refusals.push(message),
    ...options.session,
  };
  const proxy = new EgressProxy(session, { ...process.env, TEST_SECRET: 'hunter2-secret' });
  const sockets = new Set<Socket>();
  const server: Server = createServer((socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
    proxy.handle(socket);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    proxy,
    audit,
    refusals,
    rows: () => auditRowsOf(db, 'egress'),
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      db.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Sends raw bytes to the proxy and collects everything it answers until it closes. */
export function rawExchange(port: number, bytes: string | Buffer, timeoutMs = 5000): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: '127.0.0.1', port });
    const chunks: Buffer[] = [];
    const timer = setTimeout(() => {
      socket.destroy();
      reject(
        new Error(
          `no close within ${timeoutMs} ms; got ${Buffer.concat(chunks).toString('latin1').slice(0, 200)}`,
        ),
      );
    }, timeoutMs);
    socket.on('data', (c: Buffer) => chunks.push(c));
    socket.on('error', () => undefined);
    socket.on('close', () => {
      clearTimeout(timer);
      resolve(Buffer.concat(chunks));
    });
    socket.write(bytes);
  });
}

/** A TCP server on 127.0.0.1 that accepts and never answers (an upstream that hangs). */
export async function startSilentServer(): Promise<{
  port: number;
  accepted: () => number;
  close(): Promise<void>;
}> {
  let accepted = 0;
  const sockets = new Set<Socket>();
  const server = createServer((s) => {
    accepted += 1;
    sockets.add(s);
    s.on('error', () => undefined);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    accepted: () => accepted,
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** The SOCKS5 handshake for CONNECT to a name or an IPv4 address, with optional credentials. */
export function socksRequest(
  target: { name?: string; ipv4?: string; port: number },
  auth?: { user: string; password: string },
): Buffer {
  const parts: Buffer[] = [];
  if (auth) {
    parts.push(Buffer.from([0x05, 0x01, 0x02]));
    parts.push(
      Buffer.concat([
        Buffer.from([0x01, auth.user.length]),
        Buffer.from(auth.user),
        Buffer.from([auth.password.length]),
        Buffer.from(auth.password),
      ]),
    );
  } else parts.push(Buffer.from([0x05, 0x01, 0x00]));
  const port = Buffer.alloc(2);
  port.writeUInt16BE(target.port, 0);
  if (target.name) {
    parts.push(
      Buffer.concat([
        Buffer.from([0x05, 0x01, 0x00, 0x03, target.name.length]),
        Buffer.from(target.name),
        port,
      ]),
    );
  } else {
    parts.push(
      Buffer.concat([
        Buffer.from([0x05, 0x01, 0x00, 0x01]),
        Buffer.from(target.ipv4!.split('.').map(Number)),
        port,
      ]),
    );
  }
  return Buffer.concat(parts);
}
