/**
 * The PostgreSQL connection of the stores: `store.url` turned into pool settings (the password
 * comes apart, from the environment or a file), and every failure of the driver turned into a
 * PaddockError that names the fault and what to do about it.
 */
import { readFileSync } from 'node:fs';
import pg from 'pg';
import { STORE_PASSWORD_ENV } from '../../config/store-env.js';
import { PaddockError } from '../../shared/errors.js';

/** Where the stores connect, for messages: `host:port/database` as role `user`. */
export interface PgEndpoint {
  host: string;
  port: number;
  database: string;
  user: string;
}

/** Options beyond the URL. */
export interface PgPoolOptions {
  /** Most connections one server holds. Default 10. */
  maxConnections?: number;
  /** How long opening a connection (or waiting for a free one) may take. Default 10,000 ms. */
  connectTimeoutMs?: number;
  /** Longest one statement may run before the client gives up. Default 30,000 ms. */
  queryTimeoutMs?: number;
}

const SSL_MODES = ['disable', 'require', 'verify-ca', 'verify-full'] as const;
const KNOWN_PARAMS = ['host', 'sslmode', 'sslrootcert', 'application_name'];

/** int8 (bigint) columns hold epoch milliseconds and sequences: well inside 2^53. */
const INT8_OID = 20;
const types = {
  getTypeParser(oid: number, format?: 'text' | 'binary') {
    if (oid === INT8_OID && format !== 'binary') return (value: string) => Number(value);
    return pg.types.getTypeParser(oid, format);
  },
} as pg.CustomTypesConfig;

/** Parses `store.url` (`postgres://user@host:port/db?sslmode=…`, `?host=/socket/dir`). */
export function poolConfig(
  url: string,
  password: string | undefined,
  options: PgPoolOptions = {},
): { config: pg.PoolConfig; endpoint: PgEndpoint } {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw badUrl(url, 'it is not a URL');
  }
  for (const key of parsed.searchParams.keys()) {
    if (!KNOWN_PARAMS.includes(key)) {
      throw badUrl(
        url,
        `the parameter "${key}" is not one Paddock reads (it reads ${KNOWN_PARAMS.join(', ')})`,
      );
    }
  }
  const socketDir = parsed.searchParams.get('host');
  const host = socketDir ?? (parsed.hostname.replace(/^\[(.*)\]$/, '$1') || 'localhost');
  const port = parsed.port === '' ? 5432 : Number(parsed.port);
  const user = decodeURIComponent(parsed.username);
  if (user === '') throw badUrl(url, 'it names no role: write postgres://ROLE@host:5432/database');
  const database = decodeURIComponent(parsed.pathname.replace(/^\//, '')) || user;
  const sslmode = parsed.searchParams.get('sslmode') ?? 'disable';
  if (!(SSL_MODES as readonly string[]).includes(sslmode)) {
    throw badUrl(url, `sslmode "${sslmode}" is not one of ${SSL_MODES.join(', ')}`);
  }
  const ca = parsed.searchParams.get('sslrootcert');
  const ssl: pg.PoolConfig['ssl'] =
    sslmode === 'disable'
      ? false
      : {
          rejectUnauthorized: sslmode !== 'require',
          ...(sslmode === 'verify-ca' ? { checkServerIdentity: () => undefined } : {}),
          ...(ca ? { ca: readCa(ca) } : {}),
        };
  const config: pg.PoolConfig = {
    host,
    port,
    user,
    database,
    ssl,
    max: options.maxConnections ?? 10,
    connectionTimeoutMillis: options.connectTimeoutMs ?? 10_000,
    query_timeout: options.queryTimeoutMs ?? 30_000,
    idleTimeoutMillis: 30_000,
    keepAlive: true,
    application_name: parsed.searchParams.get('application_name') ?? 'paddock',
    types,
  };
  // pg reads PGPASSWORD and ~/.pgpass when no password is given; Paddock's own variable wins
  if (password !== undefined) config.password = password;
  return { config, endpoint: { host, port, database, user } };
}

function readCa(path: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch (e) {
    throw new PaddockError(
      'INVALID_ARGUMENT',
      `Cannot read sslrootcert ${path} of store.url: ${(e as Error).message}. Point it at the CA certificate (PEM) of the database server.`,
    );
  }
}

function badUrl(url: string, why: string): PaddockError {
  return new PaddockError('INVALID_ARGUMENT', `store.url "${url.slice(0, 80)}" cannot be used: ${why}.`, {
    startup: true,
  });
}

/** `role@host:port/database`, for messages. */
export function describeEndpoint(e: PgEndpoint): string {
  const where = e.host.startsWith('/') ? `the socket in ${e.host}` : `${e.host}:${e.port}`;
  return `database "${e.database}" at ${where} (role "${e.user}")`;
}

interface DriverError {
  code?: string;
  message?: string;
}

const UNREACHABLE_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ETIMEDOUT',
  'ENOENT',
  'EPIPE',
  '57P01', // admin shutdown
  '57P02', // crash shutdown
  '57P03', // cannot connect now (starting up, shutting down)
  '08000',
  '08003',
  '08006',
]);

/** True for a failure of the connection itself (the server went away or cannot be reached). */
export function isConnectionFailure(e: unknown): boolean {
  const err = e as DriverError;
  if (err?.code !== undefined && UNREACHABLE_CODES.has(err.code)) return true;
  const message = err?.message ?? '';
  return /Connection terminated|connection timeout|timeout exceeded when trying to connect|Query read timeout|Client has encountered a connection error|not queryable|Connection closed/i.test(
    message,
  );
}

/**
 * The error of a failed first connection: unreachable, refused password, no password, unknown
 * database or role. Each names the endpoint and what to do; all carry `startup: true`, so the
 * CLI exits 2 (the server cannot start on this store).
 */
export function connectError(e: unknown, endpoint: PgEndpoint): PaddockError {
  const err = e as DriverError;
  const where = describeEndpoint(endpoint);
  const reason = err?.message ?? String(e);
  const startup = { startup: true, store: 'postgres' };
  if (err?.code === '28P01') {
    return new PaddockError(
      'INVALID_ARGUMENT',
      `PostgreSQL refused the password for ${where}. Set ${STORE_PASSWORD_ENV} in the server's environment (or store.passwordFile) to that role's password, then start again.`,
      startup,
    );
  }
  if (/password must be a string|no password was provided|client password/i.test(reason)) {
    return new PaddockError(
      'INVALID_ARGUMENT',
      `PostgreSQL asks for a password for ${where} and none was given. Set ${STORE_PASSWORD_ENV} in the server's environment, or name a file holding it with store.passwordFile.`,
      startup,
    );
  }
  if (err?.code === '3D000') {
    return new PaddockError(
      'INVALID_ARGUMENT',
      `The ${where} does not exist. Create it (CREATE DATABASE "${endpoint.database}" OWNER "${endpoint.user}") or fix the database name in store.url.`,
      startup,
    );
  }
  if (err?.code === '28000') {
    return new PaddockError(
      'INVALID_ARGUMENT',
      `PostgreSQL does not let role "${endpoint.user}" connect to ${where}: ${reason}. Create the role, or allow it in the server's pg_hba.conf.`,
      startup,
    );
  }
  if (err?.code === '42501') {
    return new PaddockError(
      'INVALID_ARGUMENT',
      `Role "${endpoint.user}" may not create Paddock's tables in the ${where}: ${reason}. Make the role the database's owner, or GRANT CREATE ON SCHEMA public TO "${endpoint.user}".`,
      startup,
    );
  }
  if (isConnectionFailure(e)) {
    return new PaddockError(
      'INTERNAL',
      `Cannot reach the PostgreSQL ${where}: ${reason}. Check that the database server runs and that store.url names its host and port, then start again.`,
      startup,
    );
  }
  return new PaddockError(
    'INTERNAL',
    `Cannot use the PostgreSQL ${where}: ${reason}. Check the database server's log, then start again.`,
    startup,
  );
}

/**
 * The error of a statement that failed once the server runs. A lost connection says that the
 * store is unavailable (the call is not answered without its row); other failures keep the
 * driver's words.
 */
export function storeError(e: unknown, store: string, endpoint: PgEndpoint): PaddockError {
  if (e instanceof PaddockError) return e;
  const reason = (e as DriverError)?.message ?? String(e);
  if (isConnectionFailure(e) || (e as DriverError)?.code === '28P01') {
    return new PaddockError(
      'INTERNAL',
      `The ${store} store is unavailable: the PostgreSQL ${describeEndpoint(endpoint)} cannot be reached (${reason}). Nothing was recorded; retry once the database is back.`,
    );
  }
  return new PaddockError(
    'INTERNAL',
    `The ${store} store failed on PostgreSQL (${reason}). Check the database server's log, then retry.`,
  );
}
