import { loadConfigCached } from '../config/cached.js';
import type { LoadedConfig } from '../config/load.js';
import type { Paddock } from '../main/paddock.js';
import { createLogger, type Logger } from '../shared/logger.js';
import type { Stores } from '../store/stores.js';

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
  const { createPaddock } = await import('../main/paddock.js');
  const paddock = await createPaddock(loaded, { logger: loggerFor(loaded, true) });
  try {
    return await fn(paddock);
  } finally {
    await paddock.close();
  }
}

/**
 * Opens only the stores (no upstream server, no sandbox backend) for a command that reads or
 * changes them: safe beside a running server, which uses the same database.
 */
export async function withStores<T>(
  values: Record<string, unknown>,
  fn: (stores: Stores) => Promise<T>,
): Promise<T> {
  const loaded = await loadFor(values);
  const { openStores } = await import('../store/open.js');
  const stores = await openStores(loaded.config.store, { dataDir: loaded.dataDir });
  try {
    return await fn(stores);
  } finally {
    await stores.close();
  }
}
