/**
 * Where the one server of a data directory can be found: `<data dir>/run/` (mode 0700, owned by
 * the server's uid) holds its unix socket, its lock and `server.json` (pid, URLs, the
 * configuration it was started from, and the socket key a client presents). Only node built-ins
 * are used: the stdio bridge reads this on every start.
 */
import { chmodSync, lstatSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { PaddockError } from '../shared/errors.js';

/** Files of the server of one data directory. */
export interface InstancePaths {
  dataDir: string;
  runDir: string;
  socket: string;
  info: string;
  /** Held (an exclusive SQLite lock) by the running server for its whole life. */
  serveLock: string;
  /** Held by a bridge while it starts a server, so two bridges never start two. */
  startLock: string;
  /** Output of a server that a bridge started in the background. */
  log: string;
}

/** Longest path a unix socket address can hold on Linux (sun_path without its NUL). */
export const MAX_SOCKET_PATH = 107;

export function instancePaths(dataDir: string): InstancePaths {
  const runDir = join(dataDir, 'run');
  return {
    dataDir,
    runDir,
    socket: join(runDir, 'paddock.sock'),
    info: join(runDir, 'server.json'),
    serveLock: join(runDir, 'serve.lock'),
    startLock: join(runDir, 'start.lock'),
    log: join(dataDir, 'logs', 'serve.log'),
  };
}

/** The configuration a process runs with, as clients compare it. */
export interface ConfigIdentity {
  /** The config file read; null for the built-in defaults. */
  file: string | null;
  projectDir: string;
}

/** What a running server publishes about itself in `server.json`. */
export interface ServerInfo {
  pid: number;
  version: string;
  startedAt: string;
  /** Base URL of the dock and `/mcp`. */
  url: string;
  socket: string;
  config: ConfigIdentity;
  /** Presented by every socket client: proof that it can read this 0600 file in a 0700 directory. */
  key: string;
}

/**
 * Closes the data directory to other accounts (0700, when it is this uid's), creates the run
 * directory (0700) and checks that it belongs to this uid and is closed to others; a directory
 * owned by someone else is refused, never used.
 */
export function ensureRunDir(paths: InstancePaths): void {
  mkdirSync(paths.dataDir, { recursive: true, mode: 0o700 });
  // the data directory holds computers' disks, the audit and the socket: closed to other accounts
  // (never a shared temp directory such as /tmp, which the sticky bit marks)
  const data = lstatSync(paths.dataDir);
  const shared = (data.mode & 0o1000) !== 0;
  if (data.isDirectory() && data.uid === process.getuid?.() && !shared && (data.mode & 0o077) !== 0)
    chmodSync(paths.dataDir, 0o700);
  mkdirSync(paths.runDir, { recursive: true, mode: 0o700 });
  const st = lstatSync(paths.runDir);
  const uid = process.getuid?.() ?? st.uid;
  if (!st.isDirectory() || st.uid !== uid) {
    throw new PaddockError(
      'INVALID_ARGUMENT',
      `${paths.runDir} is not a directory owned by uid ${uid}; remove it (or use another PADDOCK_DATA) and start again.`,
    );
  }
  if ((st.mode & 0o077) !== 0) chmodSync(paths.runDir, 0o700);
  if (paths.socket.length > MAX_SOCKET_PATH) {
    throw new PaddockError(
      'INVALID_ARGUMENT',
      `the socket path ${paths.socket} is longer than ${MAX_SOCKET_PATH} bytes, the limit of a unix socket; use a shorter data directory (PADDOCK_DATA).`,
    );
  }
}

/** Reads `server.json`; undefined when it is missing or unreadable. */
export function readServerInfo(paths: InstancePaths): ServerInfo | undefined {
  try {
    const info = JSON.parse(readFileSync(paths.info, 'utf8')) as ServerInfo;
    return typeof info.pid === 'number' && typeof info.key === 'string' ? info : undefined;
  } catch {
    return undefined;
  }
}

/** Writes `server.json` atomically (mode 0600). */
export function writeServerInfo(paths: InstancePaths, info: ServerInfo): void {
  const tmp = `${paths.info}.${process.pid}.tmp`;
  writeFileSync(tmp, `${JSON.stringify(info, null, 2)}\n`, { mode: 0o600 });
  renameSync(tmp, paths.info);
}

/**
 * Whether a process with this pid runs (signal 0; EPERM means it exists under another uid). A
 * zombie — dead, not yet reaped by its parent — does not count.
 */
export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'EPERM') return false;
  }
  try {
    return !/^State:\s+Z/m.test(readFileSync(`/proc/${pid}/status`, 'utf8'));
  } catch {
    return true;
  }
}

/** The two identities in one sentence each, for a refusal that names both. */
export function describeIdentity(id: ConfigIdentity): string {
  return id.file ? id.file : `the built-in defaults (no paddock.yaml) in ${id.projectDir}`;
}

/** Whether two processes run with the same configuration. */
export function sameIdentity(a: ConfigIdentity, b: ConfigIdentity): boolean {
  return a.file === b.file && (a.file !== null || a.projectDir === b.projectDir);
}

/** A second server for a data directory whose server is running. */
export class AlreadyRunningError extends PaddockError {
  constructor(dataDir: string, info: ServerInfo | undefined) {
    super(
      'LIMIT_EXCEEDED',
      `a Paddock server already runs for the data directory ${dataDir}${info ? ` (pid ${info.pid}, ${info.url})` : ''}; use it (\`paddock status\`, \`paddock open\`), or stop it with \`paddock stop\`.`,
    );
    this.name = 'AlreadyRunningError';
  }
}
