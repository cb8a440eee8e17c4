// A throwaway PostgreSQL cluster for tests and the bench: Debian's server binaries, `initdb` in a
// temporary directory, a unix socket in that directory and a free loopback port, password
// (SCRAM) authentication for one application role, and everything stopped and removed in
// `cleanup`. The postmaster gets a parent-death signal, so even a test process killed outright
// leaves no server behind.
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import {
  chownSync,
  existsSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';

/** Where Debian installs the server binaries: /usr/lib/postgresql/<major>/bin. */
const DEBIAN_ROOT = '/usr/lib/postgresql';
const SETPRIV = '/usr/bin/setpriv';

/** The newest installed server's bin directory, or undefined when none is installed. */
export function postgresBinDir(): string | undefined {
  if (!existsSync(DEBIAN_ROOT)) return undefined;
  const majors = readdirSync(DEBIAN_ROOT)
    .filter((d) => /^\d+$/.test(d) && existsSync(join(DEBIAN_ROOT, d, 'bin', 'initdb')))
    .sort((a, b) => Number(b) - Number(a));
  return majors[0] === undefined ? undefined : join(DEBIAN_ROOT, majors[0], 'bin');
}

export interface PgClusterOptions {
  /**
   * `false` (default): fsync off, as a throwaway cluster needs no crash safety and tests run
   * faster. `true`: PostgreSQL's defaults (every commit flushed), for figures of the bench.
   */
  durable?: boolean;
  /** Extra `-c name=value` server settings. */
  settings?: Record<string, string>;
}

/** A running throwaway cluster. */
export interface PgCluster {
  /** The application role's URL without its password: postgres://paddock@127.0.0.1:PORT/paddock. */
  url: string;
  host: string;
  port: number;
  /** The directory holding the server's unix socket. */
  socketDir: string;
  user: string;
  /** The application role's password (give it through the environment, never the URL). */
  password: string;
  database: string;
  /** The server's own log (stderr) so far. */
  log(): string;
  /** Runs SQL as the superuser on `database` (default: the application database). */
  admin<T extends pg.QueryResultRow = pg.QueryResultRow>(
    sql: string,
    params?: unknown[],
    database?: string,
  ): Promise<T[]>;
  /** Creates an empty database owned by the application role; returns its URL. */
  createDatabase(name: string): Promise<string>;
  /** Ends every connection of the application role (what a database restart does to clients). */
  dropConnections(): Promise<number>;
  /** Stops the server, keeping its files (`start` brings it back on the same port). */
  stop(): Promise<void>;
  start(): Promise<void>;
  /** Stops the server and removes the directory. Safe to call twice. */
  cleanup(): Promise<void>;
}

interface RunAs {
  uid: number;
  gid: number;
}

/** As root the cluster runs as the `postgres` account (initdb refuses root), else as nobody. */
function runAs(): RunAs | undefined {
  if (process.getuid?.() !== 0) return undefined;
  const line = readFileSync('/etc/passwd', 'utf8')
    .split('\n')
    .find((l) => l.startsWith('postgres:'));
  const [, , uid, gid] = line?.split(':') ?? [];
  return uid && gid ? { uid: Number(uid), gid: Number(gid) } : { uid: 65534, gid: 65534 };
}

/** argv that runs `command` as `who`, with SIGQUIT (immediate shutdown) if this process dies. */
function asUser(who: RunAs | undefined, command: string, args: string[]): [string, string[]] {
  const drop = who ? [`--reuid=${who.uid}`, `--regid=${who.gid}`, '--clear-groups'] : [];
  return [SETPRIV, [...drop, '--pdeathsig', 'QUIT', command, ...args]];
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => (typeof address === 'object' && address ? resolve(address.port) : reject()));
    });
  });
}

/** Starts a new cluster. Fails with the server's own words when a binary or step is missing. */
export async function startPostgres(options: PgClusterOptions = {}): Promise<PgCluster> {
  const bin = postgresBinDir();
  if (bin === undefined) {
    throw new Error(
      `No PostgreSQL server under ${DEBIAN_ROOT}/*/bin. Install Debian's postgresql package (npm test's set-up does this as root).`,
    );
  }
  const who = runAs();
  const root = mkdtempSync(join(tmpdir(), 'paddock-pg-'));
  const dataDir = join(root, 'data');
  const adminPassword = randomBytes(18).toString('base64url');
  const password = randomBytes(18).toString('base64url');
  const pwFile = join(root, 'admin-password');
  writeFileSync(pwFile, `${adminPassword}\n`, { mode: 0o600 });
  if (who) {
    chownSync(root, who.uid, who.gid);
    chownSync(pwFile, who.uid, who.gid);
  }
  const [initCmd, initArgs] = asUser(who, join(bin, 'initdb'), [
    '-D',
    dataDir,
    '-U',
    'postgres',
    `--pwfile=${pwFile}`,
    '--auth-local=trust',
    '--auth-host=scram-sha-256',
    '-E',
    'UTF8',
    '--locale=C.UTF-8',
    '--no-sync',
  ]);
  const init = spawnSync(initCmd, initArgs, { cwd: root, encoding: 'utf8', timeout: 120_000 });
  rmSync(pwFile, { force: true });
  if (init.status !== 0) {
    rmSync(root, { recursive: true, force: true });
    throw new Error(`initdb failed (exit ${init.status ?? init.signal}):\n${init.stdout}\n${init.stderr}`);
  }

  let port = await freePort();
  let child: ChildProcess | undefined;
  let log = '';
  const settings: Record<string, string> = {
    listen_addresses: '127.0.0.1',
    unix_socket_directories: root,
    max_connections: '60',
    ...(options.durable ? {} : { fsync: 'off', synchronous_commit: 'off', full_page_writes: 'off' }),
    ...options.settings,
  };
  const removeOnExit = () => rmSync(root, { recursive: true, force: true });
  process.once('exit', removeOnExit);

  const launch = async (): Promise<void> => {
    const args = ['-D', dataDir, '-p', String(port)];
    for (const [k, v] of Object.entries(settings)) args.push('-c', `${k}=${v}`);
    const [cmd, argv] = asUser(who, join(bin, 'postgres'), args);
    const proc = spawn(cmd, argv, { cwd: root, stdio: ['ignore', 'ignore', 'pipe'] });
    child = proc;
    let own = '';
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        proc.kill('SIGQUIT');
        reject(new Error(`PostgreSQL did not become ready in time:\n${log}`));
      }, 60_000);
      proc.stderr?.on('data', (d: Buffer) => {
        own = `${own}${d.toString()}`.slice(-64 * 1024);
        log = `${log}${d.toString()}`.slice(-64 * 1024);
        if (own.includes('ready to accept connections')) {
          clearTimeout(timer);
          resolve();
        }
      });
      proc.once('exit', (code, signal) => {
        clearTimeout(timer);
        reject(new Error(`PostgreSQL exited (${code ?? signal}) before it was ready:\n${log}`));
      });
    });
  };

  const halt = async (): Promise<void> => {
    const proc = child;
    child = undefined;
    if (!proc || proc.exitCode !== null || proc.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => proc.once('exit', () => resolve()));
    // fast shutdown: clients are disconnected, the postmaster waits for every backend to end
    proc.kill('SIGINT');
    const timer = setTimeout(() => proc.kill('SIGKILL'), 15_000);
    await exited;
    clearTimeout(timer);
  };

  for (let attempt = 0; ; attempt++) {
    try {
      log = '';
      await launch();
      break;
    } catch (e) {
      // another process took the port between the probe and the bind: try another one
      if (attempt < 4 && /could not bind|Address already in use/.test(log)) {
        port = await freePort();
        continue;
      }
      await halt();
      removeOnExit();
      process.off('exit', removeOnExit);
      throw e;
    }
  }

  const adminQuery = async <T extends pg.QueryResultRow>(
    sql: string,
    params: unknown[] = [],
    database = 'paddock',
  ): Promise<T[]> => {
    const client = new pg.Client({ host: root, port, user: 'postgres', database });
    await client.connect();
    try {
      return (await client.query<T>(sql, params)).rows;
    } finally {
      await client.end();
    }
  };
  const quoted = `'${password}'`;
  await adminQuery(`CREATE ROLE paddock LOGIN PASSWORD ${quoted}`, [], 'postgres');
  await adminQuery('CREATE DATABASE paddock OWNER paddock', [], 'postgres');

  let cleaned = false;
  return {
    url: `postgres://paddock@127.0.0.1:${port}/paddock`,
    host: '127.0.0.1',
    port,
    socketDir: root,
    user: 'paddock',
    password,
    database: 'paddock',
    log: () => log,
    admin: adminQuery,
    async createDatabase(name) {
      if (!/^[a-z_][a-z0-9_]*$/.test(name)) throw new Error(`not a plain database name: ${name}`);
      await adminQuery(`CREATE DATABASE ${name} OWNER paddock`, [], 'postgres');
      return `postgres://paddock@127.0.0.1:${port}/${name}`;
    },
    async dropConnections() {
      const rows = await adminQuery<{ n: string }>(
        `SELECT count(pg_terminate_backend(pid))::text AS n FROM pg_stat_activity
         WHERE usename = 'paddock' AND pid <> pg_backend_pid()`,
        [],
        'postgres',
      );
      return Number(rows[0]?.n ?? 0);
    },
    stop: halt,
    start: launch,
    async cleanup() {
      if (cleaned) return;
      cleaned = true;
      await halt();
      removeOnExit();
      process.off('exit', removeOnExit);
    },
  };
}
