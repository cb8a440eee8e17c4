/**
 * A real web app with the dock on 127.0.0.1: SQLite audit and memory in a temp dir, the real
 * gateway with the memory tools, the MCP endpoint, and `createDock` wired the way
 * `paddock serve` wires it.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { WebSocket } from 'ws';
import { policySchema } from '../../../src/config/schema.js';
import { McpHttpEndpoint } from '../../../src/mcp/http.js';
import { createWhitelistSandbox } from '../../../src/policy/index.js';
import { silentLogger } from '../../../src/shared/logger.js';
import { OWNER } from '../../../src/shared/principal.js';
import { SqliteAuditStore } from '../../../src/store/sqlite/audit-store.js';
import { openDatabase } from '../../../src/store/sqlite/database.js';
import { SqliteMemoryStore } from '../../../src/store/sqlite/memory-store.js';
import { SqliteOAuthStore } from '../../../src/store/sqlite/oauth-store.js';
import { createMemoryTools } from '../../../src/tools/builtin/index.js';
import { Gateway } from '../../../src/tools/gateway.js';
import { PermissionPolicy } from '../../../src/tools/permissions.js';
import { ToolRegistry } from '../../../src/tools/registry.js';
import { InputValidator } from '../../../src/tools/validation.js';
import { WebApp } from '../../../src/web/app.js';
import { createDock, type Dock, type DockOptions } from '../../../src/web/dock/index.js';
import { type ServerMessage, serverMessageSchema } from '../../../src/web/dock/protocol.js';
import type { MetadataFetcher } from '../../../src/web/oauth/client-metadata.js';
import { createOAuth } from '../../../src/web/oauth/index.js';

export interface DockServer {
  base: string;
  host: string;
  token: string;
  dir: string;
  db: ReturnType<typeof openDatabase>;
  audit: SqliteAuditStore;
  gateway: Gateway;
  dock: Dock;
  /** Signs in through a fresh login link; returns the `Cookie` header value. */
  login(): Promise<string>;
  /** Calls save_memory through the gateway as an MCP session would. */
  saveMemory(content: string): Promise<void>;
  close(): Promise<void>;
}

export type DockServerOptions = Partial<Omit<DockOptions, 'audit' | 'logger' | 'version'>> & {
  /** Use this data dir (and its database) instead of a fresh temp dir. */
  dir?: string;
  /** Serve OAuth sign-in too, fetching client metadata documents with this. */
  oauthMetadata?: MetadataFetcher;
};

export async function startDockServer(options: DockServerOptions = {}): Promise<DockServer> {
  const ownDir = options.dir === undefined;
  const dir = options.dir ?? mkdtempSync(join(tmpdir(), 'paddock-dock-'));
  const logger = silentLogger();
  const db = openDatabase(join(dir, 'paddock.db'));
  const audit = new SqliteAuditStore(db);
  const validator = new InputValidator();
  const registry = new ToolRegistry(validator);
  registry.register(createMemoryTools({ store: new SqliteMemoryStore(db) }));
  const gateway = new Gateway({
    registry,
    audit,
    policy: createWhitelistSandbox(policySchema.parse({})),
    permissions: new PermissionPolicy([]),
    validator,
    logger,
  });
  const token = randomBytes(32).toString('base64url');
  const { dir: _dir, oauthMetadata, ...dockOptions } = options;
  const dock = createDock({
    audit,
    logger,
    version: 'test',
    auth: 'token',
    uiDir: join(dir, 'no-ui'),
    gateway,
    ...dockOptions,
  });
  const mcp = new McpHttpEndpoint({ gateway, registry, version: 'test' }, logger);
  const oauth = oauthMetadata
    ? createOAuth({
        store: new SqliteOAuthStore(db),
        logger,
        sessions: dock.login,
        fetchMetadata: oauthMetadata,
      })
    : undefined;
  const app = new WebApp({
    host: '127.0.0.1',
    port: 0,
    auth: options.auth ?? 'token',
    token,
    allowedHosts: [],
    mcp,
    logger,
    routes: [...(oauth?.routes ?? []), ...dock.routes],
    upgrades: dock.upgrades,
    sessions: dock.sessions,
    unauthorized: dock.unauthorized,
    ...(oauth ? { oauth } : {}),
  });
  const { port } = await app.listen();
  const host = `127.0.0.1:${port}`;
  const base = `http://${host}`;
  return {
    base,
    host,
    token,
    dir,
    db,
    audit,
    gateway,
    dock,
    async login() {
      const res = await fetch(dock.loginLink(base), { redirect: 'manual' });
      const setCookie = res.headers.get('set-cookie') ?? '';
      const m = /paddock_session=([^;]+)/.exec(setCookie);
      if (res.status !== 200 || !m) throw new Error(`login failed: ${res.status} ${setCookie}`);
      return `paddock_session=${m[1]}`;
    },
    async saveMemory(content) {
      const outcome = await gateway.call(
        'save_memory',
        { content },
        { principal: OWNER, caller: 'mcp:test', via: 'direct', attended: true },
      );
      if (!outcome.ok) throw outcome.error;
    },
    async close() {
      await dock.close();
      await app.close();
      db.close();
      if (ownDir) rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** A websocket client that records (and schema-checks) every message it receives. */
export interface TestSocket {
  ws: WebSocket;
  messages: ServerMessage[];
  /** Messages that did not match the server message schema (must stay empty). */
  invalid: unknown[];
  next<T extends ServerMessage['type']>(
    type: T,
    where?: (m: Extract<ServerMessage, { type: T }>) => boolean,
    timeoutMs?: number,
  ): Promise<Extract<ServerMessage, { type: T }>>;
  send(message: unknown): void;
  close(): Promise<void>;
}

/** Opens `/dock/ws` with the given headers; rejects with the HTTP status when refused. */
export function openSocket(server: DockServer, headers: Record<string, string>): Promise<TestSocket> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(`ws://${server.host}/dock/ws`, { headers });
    const messages: ServerMessage[] = [];
    const invalid: unknown[] = [];
    const waiters = new Set<() => void>();
    ws.on('message', (data) => {
      const json: unknown = JSON.parse(data.toString());
      const parsed = serverMessageSchema.safeParse(json);
      if (parsed.success) messages.push(parsed.data);
      else invalid.push(json);
      for (const w of waiters) w();
    });
    ws.once('unexpected-response', (_req, res) => {
      let body = '';
      res.on('data', (d: Buffer) => {
        body += d.toString();
      });
      res.on('end', () =>
        reject(
          Object.assign(new Error(`refused ${res.statusCode}: ${body}`), { status: res.statusCode, body }),
        ),
      );
    });
    ws.once('error', (e) => reject(e));
    ws.once('open', () =>
      resolve({
        ws,
        messages,
        invalid,
        next(type, where = () => true, timeoutMs = 5000) {
          type M = Extract<ServerMessage, { type: typeof type }>;
          const find = () => messages.find((m): m is M => m.type === type && where(m as M));
          return new Promise((done, fail) => {
            const found = find();
            if (found) return done(found);
            const timer = setTimeout(() => {
              waiters.delete(check);
              fail(new Error(`no ${type} message in time; got ${messages.map((m) => m.type).join(', ')}`));
            }, timeoutMs);
            const check = () => {
              const m = find();
              if (!m) return;
              clearTimeout(timer);
              waiters.delete(check);
              done(m);
            };
            waiters.add(check);
          });
        },
        send(message) {
          ws.send(JSON.stringify(message));
        },
        close() {
          return new Promise<void>((done) => {
            if (ws.readyState === ws.CLOSED) return done();
            ws.once('close', () => done());
            ws.terminate();
          });
        },
      }),
    );
  });
}
