import type { AuditStore } from '../audit/types.js';
import { loadConfigCached } from '../config/cached.js';
import type { LoadedConfig } from '../config/load.js';
import type { Paddock } from '../main.js';
import { createLogger, type Logger } from '../shared/logger.js';

/** Loads the configuration named by `--config` (or the defaults); unchanged ones from the cache. */
export function loadFor(values: Record<string, unknown>): Promise<LoadedConfig> {
  return loadConfigCached({ ...(typeof values.config === 'string' ? { configPath: values.config } : {}) });
}

export function loggerFor(loaded: LoadedConfig, quiet = false): Logger {
  return createLogger({ level: quiet ? 'warn' : loaded.config.log.level, json: loaded.config.log.json });
}

/** Builds the services for a one-shot command and closes them afterwards. */
export async function withPaddock<T>(
  values: Record<string, unknown>,
  fn: (p: Paddock) => Promise<T>,
): Promise<T> {
  const loaded = await loadFor(values);
  // Loaded here, not at the top: commands that need no services skip the whole composition root.
  const { createPaddock } = await import('../main.js');
  const paddock = await createPaddock(loaded, { logger: loggerFor(loaded, true) });
  try {
    return await fn(paddock);
  } finally {
    await paddock.close();
  }
}

/**
 * Opens only the data directory's audit store for a command that reads it: no upstream server,
 * no sandbox backend, so it is safe beside a running server (which writes the same file).
 */
export async function withAuditStore<T>(
  values: Record<string, unknown>,
  fn: (audit: AuditStore) => Promise<T>,
): Promise<T> {
  const loaded = await loadFor(values);
  const [{ openDatabase }, { SqliteAuditStore }, { join }] = await Promise.all([
    import('../audit/database.js'),
    import('../audit/sqlite-audit-store.js'),
    import('node:path'),
  ]);
  const db = openDatabase(join(loaded.dataDir, 'paddock.db'));
  try {
    return await fn(new SqliteAuditStore(db));
  } finally {
    db.close();
  }
}
