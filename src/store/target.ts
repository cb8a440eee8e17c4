/** Which store a configuration names, and the password of a database store (never from the config file). */
import { readFileSync } from 'node:fs';
import { isAbsolute, join, resolve } from 'node:path';
import { STORE_PASSWORD_ENV } from '../config/store-env.js';
import type { StoreConfig } from '../config/store-schema.js';
import { PaddockError } from '../shared/errors.js';

/** The embedded database file in a data directory. */
export const SQLITE_FILE = 'paddock.db';

/** Where the stores live. */
export type StoreTarget =
  | { kind: 'sqlite'; file: string }
  | {
      kind: 'postgres';
      /** The URL as configured (no password in it). */
      url: string;
      /** From `store.passwordFile` or the environment; undefined when neither gives one. */
      password: string | undefined;
    };

/**
 * Resolves `store` of paddock.yaml: absent or `sqlite:` → `<dataDir>/paddock.db`;
 * `sqlite:<path>` → that file (relative to the data directory); `postgres://…` → the database
 * with its password from `store.passwordFile`, else `PADDOCK_STORE_PASSWORD`. A URL carrying
 * a password is refused (the config schema refuses it first; this holds for any caller).
 */
export function resolveStoreTarget(
  config: StoreConfig | undefined,
  dataDir: string,
  env: NodeJS.ProcessEnv = process.env,
): StoreTarget {
  const raw = config?.url;
  if (raw === undefined || raw === 'sqlite:') return { kind: 'sqlite', file: join(dataDir, SQLITE_FILE) };
  if (raw.startsWith('sqlite:')) {
    const path = decodeURIComponent(raw.slice('sqlite:'.length).replace(/^\/\/(?=\/)/, ''));
    return { kind: 'sqlite', file: isAbsolute(path) ? path : resolve(dataDir, path) };
  }
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw badUrl(raw, 'it is not a URL');
  }
  if (url.protocol !== 'postgres:' && url.protocol !== 'postgresql:') {
    throw badUrl(raw, `the scheme "${url.protocol}" is not one Paddock knows`);
  }
  if (url.password !== '') {
    throw new PaddockError(
      'INVALID_ARGUMENT',
      `store.url holds a password; never write it in the config file. Remove it from the URL and set ${STORE_PASSWORD_ENV} in the server's environment, or name a file holding it with store.passwordFile.`,
    );
  }
  return { kind: 'postgres', url: raw, password: readPassword(config, env) };
}

function readPassword(config: StoreConfig | undefined, env: NodeJS.ProcessEnv): string | undefined {
  if (config?.passwordFile) {
    try {
      return readFileSync(config.passwordFile, 'utf8').split(/\r?\n/)[0];
    } catch (e) {
      throw new PaddockError(
        'INVALID_ARGUMENT',
        `Cannot read store.passwordFile ${config.passwordFile}: ${(e as Error).message}. Point it at a file this user can read, or unset it and set ${STORE_PASSWORD_ENV}.`,
      );
    }
  }
  const fromEnv = env[STORE_PASSWORD_ENV];
  return fromEnv === undefined || fromEnv === '' ? undefined : fromEnv;
}

function badUrl(raw: string, why: string): PaddockError {
  return new PaddockError(
    'INVALID_ARGUMENT',
    `store.url "${raw.slice(0, 80)}" cannot be used: ${why}. Write sqlite: (the embedded database) or postgres://user@host:5432/paddock.`,
  );
}
