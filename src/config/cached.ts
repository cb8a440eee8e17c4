/**
 * The validated configuration, kept in the data directory for commands that start often
 * (`policy check`, `audit`, `tools list`): when neither paddock.yaml's bytes nor the code that
 * validates it changed, they skip loading the YAML parser, zod and the schemas, which cost
 * more than the rest of such a command. A miss validates exactly as `loadConfig` does, and
 * only a configuration that passed is kept, so an invalid file is reported every time.
 */
import { createHash } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { isDeepStrictEqual } from 'node:util';
import type { LoadedConfig, LoadOptions } from './load.js';
import { locateConfig } from './locate.js';

/** What the cache file holds. */
interface CachedConfig {
  key: string;
  config: LoadedConfig['config'];
}

/** Identifies the validating code: every compiled file of this folder, and the zod release. */
function schemaIdentity(): string {
  const hash = createHash('sha256');
  const dir = dirname(fileURLToPath(import.meta.url));
  for (const name of readdirSync(dir).sort()) {
    if (name.endsWith('.js'))
      hash
        .update(name)
        .update('\0')
        .update(readFileSync(join(dir, name)));
  }
  const zod = createRequire(import.meta.url)('zod/package.json') as { version: string };
  return hash.update(`zod@${zod.version}`).digest('hex');
}

/** `loadConfig`, answered from `<data>/run/config-cache.json` when the file and schema are unchanged. */
export async function loadConfigCached(options: LoadOptions = {}): Promise<LoadedConfig> {
  const { file, missing, projectDir, dataDir } = locateConfig(options);
  const load = () => import('./load.js');
  if (missing) throw (await load()).missingConfig(missing);
  const text = file ? readFileSync(file, 'utf8') : undefined;
  const key = createHash('sha256')
    .update(schemaIdentity())
    .update(file === undefined ? '\0defaults' : `\0file\0${file}\0${text}`)
    .digest('hex');
  const where = { ...(file ? { file } : {}), projectDir, dataDir };
  const cacheFile = join(dataDir, 'run', 'config-cache.json');
  const cached = readCache(cacheFile);
  if (cached?.key === key) return { config: cached.config, ...where };
  const config = (await load()).validateConfigText(file, text);
  writeCache(cacheFile, { key, config });
  return { config, ...where };
}

function readCache(cacheFile: string): CachedConfig | undefined {
  try {
    const value = JSON.parse(readFileSync(cacheFile, 'utf8')) as Partial<CachedConfig>;
    return typeof value.key === 'string' && value.config ? (value as CachedConfig) : undefined;
  } catch {
    return undefined; // absent or unreadable: validate
  }
}

/** Keeps `entry` when JSON holds the configuration exactly; a failure to write only costs the next start. */
function writeCache(cacheFile: string, entry: CachedConfig): void {
  try {
    if (!isDeepStrictEqual(JSON.parse(JSON.stringify(entry.config)), entry.config)) return;
    mkdirSync(dirname(cacheFile), { recursive: true, mode: 0o700 });
    const tmp = `${cacheFile}.${process.pid}.tmp`;
    writeFileSync(tmp, JSON.stringify(entry), { mode: 0o600 });
    renameSync(tmp, cacheFile);
  } catch {
    // a read-only data directory: every start validates
  }
}
