import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import type { Logger } from '../shared/logger.js';
import type { UpstreamToolDef } from './client-pool.js';
import type { McpServerConfig } from './load-config.js';

interface CacheEntry {
  fingerprint: string;
  savedAt: number;
  tools: UpstreamToolDef[];
}

interface CacheFile {
  version: 1;
  servers: Record<string, CacheEntry>;
}

/**
 * Identifies how a server is started (transport, command, args, env, cwd, url, headers):
 * a cached tool list is only reused for the same start. Hashed, so no secret is stored.
 */
export function serverFingerprint(config: McpServerConfig): string {
  const start =
    config.transport === 'stdio'
      ? [config.transport, config.command, config.args, config.env, config.cwd ?? null]
      : [config.transport, config.url, config.headers];
  return createHash('sha256').update(JSON.stringify(start)).digest('hex');
}

/**
 * The last tool list of each server, in a JSON file of the data directory, so a lazy server's
 * tools are registered at start without starting it. A missing, unreadable or foreign file is
 * an empty cache; writes replace the file atomically (temp file + rename).
 */
export class ToolListCache {
  private data: CacheFile = { version: 1, servers: {} };

  constructor(
    private readonly file: string,
    private readonly logger: Logger,
  ) {
    try {
      const parsed = JSON.parse(readFileSync(file, 'utf8')) as Partial<CacheFile>;
      if (parsed.version === 1 && parsed.servers && typeof parsed.servers === 'object') {
        this.data = { version: 1, servers: parsed.servers };
      }
    } catch {
      // no cache yet (or an unreadable one): every lazy server is discovered once
    }
  }

  /** The cached tools of a server, if cached for the same start configuration. */
  get(config: McpServerConfig): UpstreamToolDef[] | undefined {
    const entry = this.data.servers[config.name];
    if (!entry || entry.fingerprint !== serverFingerprint(config) || !Array.isArray(entry.tools))
      return undefined;
    return entry.tools;
  }

  set(config: McpServerConfig, tools: UpstreamToolDef[]): void {
    this.data.servers[config.name] = { fingerprint: serverFingerprint(config), savedAt: Date.now(), tools };
    try {
      mkdirSync(dirname(this.file), { recursive: true });
      const tmp = `${this.file}.${process.pid}.tmp`;
      writeFileSync(tmp, JSON.stringify(this.data), { mode: 0o600 });
      renameSync(tmp, this.file);
    } catch (e) {
      this.logger.warn('mcp.cache_failed', { file: this.file, error: (e as Error).message });
    }
  }
}
