/**
 * `paddock tools list` with no server running. Without upstream servers and plugins, the tool
 * list is a function of the code and the configuration files alone (the built-in and computer
 * tools, and the permissions of paddock.yaml): it is kept in `<data>/run/tools-catalog.json`
 * under a key of them, so later listings skip building a Paddock (stores, computer service,
 * agents), which costs several times a bare Node start. With an upstream server or a plugin
 * configured, every listing builds the Paddock and asks them, as before: their tools can
 * change without any file here changing.
 */
import { createHash } from 'node:crypto';
import {
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { LoadedConfig } from '../config/load.js';
import { MCP_SERVERS_FILE_NAMES } from '../integrations/config-files.js';
import type { ActIo } from './acts.js';
import { loadFor, withPaddock } from './context.js';
import { printToolRows, type ToolRow, toolRows } from './tool-rows.js';

interface Catalog {
  key: string;
  rows: ToolRow[];
}

/** Lists the tools of a Paddock built for this command, from the catalog when it is current. */
export async function listToolsLocally(
  values: Record<string, unknown>,
  json: boolean,
  io: ActIo,
): Promise<number> {
  const loaded = await loadFor(values);
  const key = catalogKey(loaded);
  const file = join(loaded.dataDir, 'run', 'tools-catalog.json');
  let rows = key === undefined ? undefined : readCatalog(file, key);
  if (!rows) {
    const { discovered } = await import('./acts.js');
    const built = await withPaddock(values, async (p) => {
      await discovered(p.integrations);
      const { integrations } = p;
      return { rows: toolRows(p), live: integrations.servers().length + integrations.plugins().length > 0 };
    });
    rows = built.rows;
    if (key !== undefined && !built.live) writeCatalog(file, { key, rows });
  }
  printToolRows(rows, json, io);
  return 0;
}

/**
 * The catalog's key: the compiled code (path, size and modification time of every module, so
 * a rebuild or an edited file is a new key), the validated configuration and the text of
 * mcp_servers.yaml (one that names no server, such as `paddock init` writes, still allows a
 * catalog). Undefined when a plugin folder or a configured plugin makes the list live.
 */
function catalogKey(loaded: LoadedConfig): string | undefined {
  const paddockDir = join(loaded.projectDir, '.paddock');
  if (loaded.config.plugins.length > 0 || existsSync(join(paddockDir, 'plugins'))) return undefined;
  try {
    const hash = createHash('sha256');
    for (const name of MCP_SERVERS_FILE_NAMES) {
      const path = join(paddockDir, name);
      if (existsSync(path)) hash.update(`${name}\0${readFileSync(path, 'utf8')}\0`);
    }
    const srcRoot = dirname(dirname(fileURLToPath(import.meta.url)));
    for (const entry of readdirSync(srcRoot, { recursive: true, withFileTypes: true })) {
      if (!entry.isFile() || !entry.name.endsWith('.js')) continue;
      // `parentPath` from Node 20.12; `path` before it
      const path = join(entry.parentPath ?? (entry as { path?: string }).path ?? srcRoot, entry.name);
      const { size, mtimeMs } = statSync(path);
      hash.update(`${path}\0${size}\0${mtimeMs}\n`);
    }
    return hash.update(JSON.stringify(loaded.config)).digest('hex');
  } catch {
    return undefined; // the code cannot be identified: no catalog, build the Paddock
  }
}

function readCatalog(file: string, key: string): ToolRow[] | undefined {
  try {
    const value = JSON.parse(readFileSync(file, 'utf8')) as Partial<Catalog>;
    return value.key === key && Array.isArray(value.rows) ? value.rows : undefined;
  } catch {
    return undefined; // absent or unreadable: build the Paddock
  }
}

/** Replaces the catalog atomically; a failure to write only costs the next listing its speed. */
function writeCatalog(file: string, catalog: Catalog): void {
  try {
    mkdirSync(dirname(file), { recursive: true, mode: 0o700 });
    const tmp = `${file}.${process.pid}.tmp`;
    writeFileSync(tmp, JSON.stringify(catalog), { mode: 0o600 });
    renameSync(tmp, file);
  } catch {
    // a read-only data directory: every listing builds the Paddock
  }
}
