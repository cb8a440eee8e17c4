import { ConfigError } from '../config/config-error.js';
import type { LoadedConfig } from '../config/load.js';
import { isPaddockError } from '../shared/errors.js';
import type { Sandbox } from './types.js';
import { createWhitelistSandbox } from './whitelist-sandbox.js';

/** Compiles the configured policy; an invalid rule is a configuration error (exit code 2). */
export function compilePolicy(loaded: LoadedConfig): Sandbox {
  try {
    return createWhitelistSandbox(loaded.config.policy);
  } catch (e) {
    if (isPaddockError(e)) throw new ConfigError(loaded.file ?? '(defaults)', [`policy: ${e.message}`]);
    throw e;
  }
}
