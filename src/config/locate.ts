import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join, resolve } from 'node:path';

/** Where a configuration would be read from, found without reading or validating it. */
export interface ConfigLocation {
  /** The config file that would be read; undefined when the built-in defaults apply. */
  file?: string;
  /** A file named by `--config` or `PADDOCK_CONFIG` that does not exist. */
  missing?: string;
  /** Directory holding `.paddock/` (the config file's directory, else the working directory). */
  projectDir: string;
  dataDir: string;
}

export interface LocateOptions {
  /** `--config` from the command line. */
  configPath?: string;
  cwd?: string;
  env?: NodeJS.ProcessEnv;
}

/**
 * Finds the configuration as `loadConfig` does — `--config`, then `PADDOCK_CONFIG`, then
 * `./paddock.yaml` (or `.yml`) — and the data directory (`PADDOCK_DATA`, else
 * `~/.local/share/paddock`). Reads nothing, so the stdio bridge can find its server quickly.
 */
export function locateConfig(options: LocateOptions = {}): ConfigLocation {
  const env = options.env ?? process.env;
  const cwd = options.cwd ?? process.cwd();
  const dataDir = resolve(cwd, env.PADDOCK_DATA ?? join(homedir(), '.local', 'share', 'paddock'));
  const named = options.configPath ?? env.PADDOCK_CONFIG;
  if (named) {
    const file = resolve(cwd, named);
    if (!existsSync(file)) return { missing: file, projectDir: cwd, dataDir };
    return { file, projectDir: dirname(file), dataDir };
  }
  for (const name of ['paddock.yaml', 'paddock.yml']) {
    const file = join(cwd, name);
    if (existsSync(file)) return { file, projectDir: cwd, dataDir };
  }
  return { projectDir: cwd, dataDir };
}
