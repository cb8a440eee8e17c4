/**
 * The server's unix socket: where `paddock mcp` (the stdio bridge) and the CLI's `status`,
 * `stop` and `open` reach the one server of a data directory.
 *
 * Who may connect: the socket (mode 0600) lives in the run directory (mode 0700, owned by the
 * server's uid, checked at start), so the kernel lets only that uid (and root) reach it; and every
 * client presents the key of `server.json`, a 0600 file in the same directory that is new at each
 * start. Node cannot read SO_PEERCRED, so the key is the credential check: a peer that was handed
 * the socket some other way (a bind mount into a container, a loosened mode) still cannot open a
 * session without being able to read the server's files.
 */
import { randomBytes, randomUUID, timingSafeEqual } from 'node:crypto';
import { chmodSync, rmSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import { StdioServerTransport } from '@modelcontextprotocol/server/stdio';
import { computerNameProblem } from '../shared/computer-name.js';
import { toPaddockError } from '../shared/errors.js';
import type { Logger } from '../shared/logger.js';
import { DEFAULT_SLOW_READER_LIMITS, guardSlowReader, type SlowReaderLimits } from '../shared/slow-reader.js';
import {
  type ConfigIdentity,
  describeIdentity,
  type InstancePaths,
  sameIdentity,
  writeServerInfo,
} from './instance.js';
import { LineLimiter, MAX_MESSAGE_BYTES, oversizedReply } from './line-limit.js';
import { createMcpServer, type McpServerDeps } from './server.js';
import { type McpSessions, sessionCaller, sessionComputer } from './sessions.js';
import { type CliRunner, serveCli } from './socket-ops.js';
import { MAX_HELLO_BYTES, type SocketHello, type SocketReply } from './socket-protocol.js';

/** The one-shot requests of the CLI, answered by the server that owns everything. */
export interface SocketControl {
  status(): Record<string, unknown>;
  /** A fresh single-use login link to the dock. */
  openLink(): string;
  /** Begins an orderly shutdown of the server (after the reply is sent). */
  stop(): void;
  /** Answers a CLI approvals request; throws a PaddockError that is sent back as the refusal. */
  approvals?(request: Record<string, unknown>): Promise<Record<string, unknown>>;
  /** Answers `paddock computers` (list, stop, rm); throws a PaddockError sent back as the refusal. */
  computers?(request: Record<string, unknown>): Promise<Record<string, unknown>>;
  /** Answers `paddock clients revoke` (the server ends everything of the client); throws a PaddockError. */
  clients?(request: Record<string, unknown>): Promise<Record<string, unknown>>;
  /** Runs an acting CLI command inside the server (`paddock tools call`, `agents run`, …). */
  cli?: CliRunner;
}

export interface SocketServerOptions {
  paths: InstancePaths;
  /** The configuration this server runs with. */
  identity: ConfigIdentity;
  mcp: McpServerDeps;
  sessions: McpSessions;
  control: SocketControl;
  logger: Logger;
  maxMessageBytes?: number;
  /** How long a client may take to send its opening line. */
  helloTimeoutMs?: number;
  /** Bounds for a client that stops reading (sessions and CLI commands). */
  slowReader?: SlowReaderLimits;
}

/** Listens on the run directory's socket; each `mcp` connection is one MCP session. */
export class McpSocketServer {
  private readonly server: Server;
  private readonly connections = new Set<Socket>();
  private readonly maxMessageBytes: number;
  private readonly slowReader: SlowReaderLimits;
  /** The key of server.json that clients must present; new at every start. */
  private readonly key = randomBytes(32).toString('base64url');

  constructor(private readonly options: SocketServerOptions) {
    this.maxMessageBytes = options.maxMessageBytes ?? MAX_MESSAGE_BYTES;
    this.slowReader = options.slowReader ?? DEFAULT_SLOW_READER_LIMITS;
    this.server = createServer((socket) => this.accept(socket));
  }

  /**
   * Listens, replacing a socket file a crashed server left (the caller holds the serve lock, so
   * no live server owns it), closes it to everyone but this uid, and publishes server.json.
   */
  async listen(about: { version: string; url: string }): Promise<{ replacedStale: boolean }> {
    const { socket } = this.options.paths;
    let replacedStale = false;
    try {
      rmSync(socket);
      replacedStale = true;
    } catch {
      // no socket left behind
    }
    writeServerInfo(this.options.paths, {
      pid: process.pid,
      ...about,
      startedAt: new Date().toISOString(),
      socket,
      config: this.options.identity,
      key: this.key,
    });
    await new Promise<void>((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(socket, () => {
        this.server.off('error', reject);
        resolve();
      });
    });
    chmodSync(socket, 0o600);
    return { replacedStale };
  }

  /** Ends every session and stops listening; removes the socket file. */
  async close(): Promise<void> {
    for (const socket of this.connections) socket.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
    rmSync(this.options.paths.socket, { force: true });
    rmSync(this.options.paths.info, { force: true });
  }

  private accept(socket: Socket): void {
    this.connections.add(socket);
    socket.once('close', () => this.connections.delete(socket));
    socket.on('error', () => socket.destroy());
    let buffered = Buffer.alloc(0);
    const timer = setTimeout(() => {
      socket.off('data', onData);
      this.refuse(socket, 'TIMEOUT', 'No opening line arrived in time.');
    }, this.options.helloTimeoutMs ?? 10_000);
    const onData = (chunk: Buffer) => {
      buffered = Buffer.concat([buffered, chunk]);
      const nl = buffered.indexOf(10);
      if (nl === -1) {
        if (buffered.length > MAX_HELLO_BYTES) {
          clearTimeout(timer);
          socket.off('data', onData);
          this.refuse(socket, 'INVALID_ARGUMENT', `The opening line is over ${MAX_HELLO_BYTES} bytes.`);
        }
        return;
      }
      clearTimeout(timer);
      socket.off('data', onData);
      socket.pause();
      this.opened(socket, buffered.subarray(0, nl).toString('utf8'), buffered.subarray(nl + 1));
    };
    socket.on('data', onData);
  }

  private opened(socket: Socket, line: string, rest: Buffer): void {
    const hello = parseHello(line);
    const refusal =
      typeof hello === 'string' ? { code: 'INVALID_ARGUMENT', message: hello } : this.check(hello);
    if (refusal || typeof hello === 'string') {
      if (refusal) this.refuse(socket, refusal.code, refusal.message);
      return;
    }
    const { control } = this.options;
    if (hello.op === 'mcp') this.session(socket, hello, rest);
    else if (hello.op === 'status') this.answer(socket, { paddock: 1, ok: true, ...control.status() });
    else if (hello.op === 'open') this.answer(socket, { paddock: 1, ok: true, url: control.openLink() });
    else if (hello.op === 'approvals')
      void this.control(socket, control.approvals, hello.approvals ?? {}, 'This server keeps no approvals.');
    else if (hello.op === 'computers')
      void this.control(socket, control.computers, hello.computers ?? {}, 'This server runs no computers.');
    else if (hello.op === 'clients')
      void this.control(socket, control.clients, hello.clients ?? {}, 'This server has no OAuth clients.');
    else if (hello.op === 'cli' && control.cli)
      serveCli(socket, hello.cli ?? {}, control.cli, this.options.logger, this.slowReader);
    else if (hello.op === 'cli')
      this.refuse(socket, 'UNSUPPORTED_CAPABILITY', 'This server runs no CLI commands.');
    else {
      this.answer(socket, { paddock: 1, ok: true, pid: process.pid });
      control.stop();
    }
  }

  /** Why an opening line is refused: the key, the configuration, the computer name. */
  private check(hello: SocketHello): { code: string; message: string } | null {
    const { identity, logger, paths } = this.options;
    if (!keyMatches(hello.key, this.key)) {
      logger.warn('server.socket_refused', { reason: 'key' });
      return {
        code: 'PERMISSION_REQUIRED',
        message:
          'The socket key does not match this server; read it from run/server.json of the data directory.',
      };
    }
    if (hello.op !== 'mcp' && hello.op !== 'cli') return null;
    if (hello.config && !sameIdentity(hello.config, identity)) {
      return {
        code: 'CONFIG_MISMATCH',
        message: `The Paddock server of ${paths.dataDir} (pid ${process.pid}) runs with ${describeIdentity(identity)}, but this client would load ${describeIdentity(hello.config)}. Run \`paddock stop\` to restart it with this configuration, start the client ${identity.file ? `with --config ${identity.file}` : `in ${identity.projectDir} without --config`}, or use another PADDOCK_DATA.`,
      };
    }
    const problem = hello.computer === undefined ? null : computerNameProblem(hello.computer);
    return problem ? { code: 'INVALID_ARGUMENT', message: problem } : null;
  }

  private session(socket: Socket, hello: SocketHello, rest: Buffer): void {
    const { logger, sessions } = this.options;
    const id = randomUUID();
    const ref = sessionComputer(id, hello.computer);
    const deps = hello.toolsets ? { ...this.options.mcp, toolsets: hello.toolsets } : this.options.mcp;
    const { server, dispose } = createMcpServer(deps, () => sessionCaller(id, ref));
    const end = sessions.add(id, 'socket', ref);
    const limiter = new LineLimiter(this.maxMessageBytes, (dropped) => {
      logger.warn('mcp.message_oversized', { session: id, bytes: dropped.bytes });
      if (!socket.destroyed) socket.write(oversizedReply(dropped, this.maxMessageBytes));
    });
    const transport = new StdioServerTransport(limiter, socket);
    guardSlowReader(socket, this.slowReader, (drop) =>
      logger.warn('mcp.peer_dropped', { session: id, transport: 'socket', ...drop }),
    );
    let ended = false;
    const finish = () => {
      if (ended) return;
      ended = true;
      end();
      dispose();
      logger.info('mcp.session_closed', { session: id, transport: 'socket' });
    };
    transport.onclose = () => {
      finish();
      socket.destroy();
    };
    socket.once('close', () => {
      finish();
      void server.close().catch(() => {});
    });
    server.oninitialized = () => {
      const client = server.getClientVersion();
      if (client) sessions.setClient(id, `${client.name} ${client.version}`);
    };
    socket.write(`${JSON.stringify({ paddock: 1, ok: true, session: id, pid: process.pid })}\n`);
    server.connect(transport).then(
      () => {
        logger.info('mcp.session_opened', { session: id, transport: 'socket', computer: ref });
        if (rest.length > 0) limiter.write(rest);
        socket.pipe(limiter);
        socket.resume();
      },
      (e: unknown) => {
        logger.error('mcp.session_failed', { session: id, error: (e as Error).message });
        socket.destroy();
      },
    );
  }

  /** Answers one control request (`approvals`, `computers`) with the handler's reply or its refusal. */
  private async control(
    socket: Socket,
    handler: ((request: Record<string, unknown>) => Promise<Record<string, unknown>>) | undefined,
    request: Record<string, unknown>,
    missing: string,
  ): Promise<void> {
    if (!handler) {
      this.refuse(socket, 'UNSUPPORTED_CAPABILITY', missing);
      return;
    }
    try {
      this.answer(socket, { paddock: 1, ok: true, ...(await handler(request)) });
    } catch (e) {
      const error = toPaddockError(e);
      this.refuse(socket, error.code, error.message);
    }
  }

  /** Sends the one reply line and closes; a peer that keeps the connection open is cut off. */
  private answer(socket: Socket, reply: SocketReply): void {
    socket.end(`${JSON.stringify(reply)}\n`);
    setTimeout(() => socket.destroy(), 5000).unref();
  }

  private refuse(socket: Socket, code: string, message: string): void {
    if (socket.destroyed) return;
    this.answer(socket, { paddock: 1, ok: false, code, message });
  }
}

function keyMatches(presented: string, key: string): boolean {
  const a = Buffer.from(presented);
  const b = Buffer.from(key);
  return a.length === b.length && timingSafeEqual(a, b);
}

/** The opening line, checked field by field; a string says what is wrong. */
function parseHello(line: string): SocketHello | string {
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch {
    return 'The opening line is not JSON; send {"paddock":1,"op":"mcp","key":"…"} first.';
  }
  const v = value as Partial<SocketHello> | null;
  if (!v || typeof v !== 'object' || v.paddock !== 1)
    return 'The opening line must be a {"paddock":1,…} object.';
  if (!['mcp', 'status', 'stop', 'open', 'approvals', 'computers', 'clients', 'cli'].includes(v.op as string))
    return 'op must be one of mcp, status, stop, open, approvals, computers, clients, cli.';
  if (v.clients !== undefined && (typeof v.clients !== 'object' || v.clients === null))
    return 'clients must be an object.';
  if (v.cli !== undefined && (typeof v.cli !== 'object' || v.cli === null)) return 'cli must be an object.';
  if (v.approvals !== undefined && (typeof v.approvals !== 'object' || v.approvals === null))
    return 'approvals must be an object.';
  if (v.computers !== undefined && (typeof v.computers !== 'object' || v.computers === null))
    return 'computers must be an object.';
  if (typeof v.key !== 'string') return 'key must be the string of run/server.json.';
  if (v.computer !== undefined && typeof v.computer !== 'string') return 'computer must be a string.';
  if (
    v.toolsets !== undefined &&
    !(Array.isArray(v.toolsets) && v.toolsets.every((t) => typeof t === 'string'))
  )
    return 'toolsets must be an array of strings.';
  if (
    v.config !== undefined &&
    !(
      typeof v.config === 'object' &&
      v.config !== null &&
      (v.config.file === null || typeof v.config.file === 'string') &&
      typeof v.config.projectDir === 'string'
    )
  )
    return 'config must be {"file": string | null, "projectDir": string}.';
  return v as SocketHello;
}
