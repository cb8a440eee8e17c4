import { existsSync, readFileSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { ConfigError, parseYaml } from '../config/load.js';
import {
  MCP_SERVER_FOREIGN_KEYS,
  MCP_SERVER_KNOWN_KEYS,
  type McpServerEntry,
  mcpServersFileSchema,
} from '../config/mcp-servers-schema.js';
import type { Permission } from '../tools/tool.js';
import { MCP_SERVERS_FILE_NAMES } from './config-files.js';
import { expandVars } from './expand-vars.js';
import { sanitizeName } from './naming.js';

interface ServerConfigBase {
  /** The name as written in the file (tool source `mcp:<name>`, tool set `<name>`). */
  name: string;
  /** `name` sanitised to `[a-z0-9_]`: the prefix of its tool names. */
  prefix: string;
  enabled: boolean;
  timeoutMs: number;
  permissions: Record<string, Permission>;
  toolsets: string[];
  startup: 'lazy' | 'eager';
  /** Expected definition hashes by upstream tool name (`pins` in the file); absent: pins live in the store. */
  pins?: Record<string, string>;
}

/** A server started as a local process speaking MCP over its stdin/stdout. */
export interface StdioServerConfig extends ServerConfigBase {
  transport: 'stdio';
  command: string;
  args: string[];
  env: Record<string, string>;
  cwd?: string;
}

/** A server reached over HTTP: Streamable HTTP (`http`) or the legacy HTTP+SSE transport (`sse`). */
export interface HttpServerConfig extends ServerConfigBase {
  transport: 'http' | 'sse';
  url: string;
  headers: Record<string, string>;
}

/** One upstream server, validated, with every `${VAR}` expanded (disabled servers are not expanded). */
export type McpServerConfig = StdioServerConfig | HttpServerConfig;

/** The outcome of {@link loadMcpServers}. */
export interface LoadedMcpServers {
  /** The file read, or `null` when the directory has none (no upstream servers). */
  file: string | null;
  servers: McpServerConfig[];
  /** Keys that were accepted but are not used by Paddock, one `path: message` each. */
  warnings: string[];
}

export interface LoadMcpServersOptions {
  /** Base of relative `cwd` values; default: the parent of `dir` when `dir` is `.paddock`, else `dir`. */
  projectDir?: string;
}

const FILE_NAMES = MCP_SERVERS_FILE_NAMES;

/**
 * Reads `<dir>/mcp_servers.yaml` (or `.yml`, or `.json`): the `mcpServers` map of Claude
 * Desktop, Cursor and Claude Code, plus Paddock's per-server options. Throws a
 * {@link ConfigError} (PaddockError `INVALID_ARGUMENT`) listing every problem as one
 * `path: message` line: YAML/JSON syntax (with line and column), unknown or misspelt keys,
 * a missing command, an unset variable (naming server, field and variable), two files at once.
 */
export function loadMcpServers(
  dir: string,
  env: NodeJS.ProcessEnv,
  options: LoadMcpServersOptions = {},
): LoadedMcpServers {
  const present = FILE_NAMES.map((n) => join(dir, n)).filter((p) => existsSync(p));
  if (present.length === 0) return { file: null, servers: [], warnings: [] };
  const file = present[0]!;
  if (present.length > 1) {
    throw new ConfigError(file, [
      `(file): found ${present.map((p) => basename(p)).join(' and ')}; keep one of them (Paddock will not guess which is current)`,
    ]);
  }
  const text = readFileSync(file, 'utf8');
  const raw = file.endsWith('.json') ? parseJson(file, text) : (parseYaml(file, text) ?? {});
  const projectDir =
    options.projectDir ?? (basename(resolve(dir)) === '.paddock' ? dirname(resolve(dir)) : resolve(dir));
  const problems: string[] = [];
  const warnings: string[] = [];

  if (raw !== null && typeof raw === 'object' && !Array.isArray(raw)) {
    for (const key of Object.keys(raw)) {
      if (key !== 'mcpServers' && isNearMiss(key, 'mcpServers')) {
        problems.push(`${key}: unknown key (did you mean "mcpServers"?)`);
      }
    }
  }
  const parsed = mcpServersFileSchema.safeParse(raw);
  if (!parsed.success) {
    for (const issue of parsed.error.issues) {
      const path = issue.path.length > 0 ? issue.path.map(String).join('.') : '(root)';
      const hint =
        issue.path.length <= 1 && issue.code === 'invalid_type' ? ' (a top-level `mcpServers` map)' : '';
      problems.push(`${path}: ${issue.message}${hint}`);
    }
    throw new ConfigError(file, problems);
  }

  const servers: McpServerConfig[] = [];
  const prefixes = new Map<string, string>();
  for (const [name, entry] of Object.entries(parsed.data.mcpServers)) {
    const at = `mcpServers.${name}`;
    checkKeys(entry, at, problems, warnings);
    const prefix = sanitizeName(name);
    if (!prefix) {
      problems.push(`${at}: the server name needs at least one letter or digit (it prefixes the tool names)`);
      continue;
    }
    const other = prefixes.get(prefix);
    if (other !== undefined) {
      problems.push(
        `${at}: servers "${other}" and "${name}" would both name their tools "${prefix}_…"; rename one of them`,
      );
    }
    prefixes.set(prefix, name);
    const server = buildServer(name, prefix, entry, at, env, projectDir, problems);
    if (server) servers.push(server);
  }
  if (problems.length > 0) throw new ConfigError(file, problems);
  return { file, servers, warnings };
}

function buildServer(
  name: string,
  prefix: string,
  entry: McpServerEntry,
  at: string,
  env: NodeJS.ProcessEnv,
  projectDir: string,
  problems: string[],
): McpServerConfig | undefined {
  const enabled = entry.enabled && entry.disabled !== true;
  const base = {
    name,
    prefix,
    enabled,
    timeoutMs: entry.timeoutMs,
    permissions: entry.permissions,
    toolsets: entry.toolsets,
    startup: entry.startup,
    ...(entry.pins ? { pins: entry.pins } : {}),
  };
  const transport = transportOf(entry, at, problems);
  if (!transport) return undefined;
  // A disabled entry is kept as written: its variables need not be set.
  const expand = (value: string, field: string): string => {
    if (!enabled) return value;
    const result = expandVars(value, env);
    if (result.ok) return result.value;
    for (const p of result.problems) problems.push(`${at}.${field}: ${p}`);
    return value;
  };
  const expandMap = (map: Record<string, string>, field: string) =>
    Object.fromEntries(Object.entries(map).map(([k, v]) => [k, expand(v, `${field}.${k}`)]));

  if (transport === 'stdio') {
    const command = expand(entry.command!, 'command');
    const args = entry.args.map((a, i) => expand(a, `args.${i}`));
    const cwd = entry.cwd === undefined ? undefined : resolve(projectDir, expand(entry.cwd, 'cwd'));
    return { ...base, transport, command, args, env: expandMap(entry.env, 'env'), ...(cwd ? { cwd } : {}) };
  }
  const url = expand(entry.url!, 'url');
  if (enabled && !isHttpUrl(url)) {
    problems.push(
      `${at}.url: "${url}" is not an http:// or https:// URL; give the full endpoint, e.g. https://host/mcp`,
    );
  }
  return { ...base, transport, url, headers: expandMap(entry.headers, 'headers') };
}

function transportOf(
  entry: McpServerEntry,
  at: string,
  problems: string[],
): 'stdio' | 'http' | 'sse' | undefined {
  const hasCommand = entry.command !== undefined;
  const hasUrl = entry.url !== undefined;
  const type = entry.type;
  if (type === 'stdio' || (type === undefined && hasCommand && !hasUrl)) {
    if (!hasCommand)
      problems.push(`${at}.command: required for a stdio server; give the executable that starts it`);
    if (hasUrl) problems.push(`${at}.url: a stdio server has no url; remove it or set type: http`);
    return hasCommand && !hasUrl ? 'stdio' : undefined;
  }
  if (type === undefined) {
    if (hasCommand && hasUrl) {
      problems.push(`${at}: give either command (a stdio server) or url (an HTTP server), not both`);
    } else if (!hasUrl) {
      problems.push(`${at}.command: missing; give command (a stdio server) or url (an HTTP server)`);
    }
    return hasUrl && !hasCommand ? 'http' : undefined;
  }
  if (!hasUrl) problems.push(`${at}.url: required for type ${type}; give the server's endpoint`);
  if (hasCommand)
    problems.push(`${at}.command: a ${type} server has no command; remove it or set type: stdio`);
  if (!hasUrl || hasCommand) return undefined;
  return type === 'sse' ? 'sse' : 'http';
}

function checkKeys(entry: Record<string, unknown>, at: string, problems: string[], warnings: string[]): void {
  const known: readonly string[] = MCP_SERVER_KNOWN_KEYS;
  const foreign: readonly string[] = MCP_SERVER_FOREIGN_KEYS;
  for (const key of Object.keys(entry)) {
    if (known.includes(key) || foreign.includes(key)) continue;
    const near = known.find((k) => isNearMiss(key, k));
    if (near) problems.push(`${at}.${key}: unknown key (did you mean "${near}"?)`);
    else warnings.push(`${at}.${key}: ignored (not a key Paddock uses)`);
  }
}

/** True when `key` looks like a misspelling of `target` (same letters ignoring case and `_`/`-`, or ≤ 2 edits). */
function isNearMiss(key: string, target: string): boolean {
  const norm = (s: string) => s.toLowerCase().replace(/[_-]/g, '');
  if (norm(key) === norm(target)) return true;
  return target.length >= 4 && editDistance(key.toLowerCase(), target.toLowerCase()) <= 2;
}

function editDistance(a: string, b: string): number {
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const cur = [i];
    for (let j = 1; j <= b.length; j++) {
      cur[j] = Math.min(prev[j]! + 1, cur[j - 1]! + 1, prev[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    prev = cur;
  }
  return prev[b.length]!;
}

function isHttpUrl(text: string): boolean {
  try {
    const u = new URL(text);
    return u.protocol === 'http:' || u.protocol === 'https:';
  } catch {
    return false;
  }
}

/** JSON.parse with the error position turned into `line L, column C`. */
function parseJson(file: string, text: string): unknown {
  try {
    return JSON.parse(text);
  } catch (e) {
    const message = (e as Error).message;
    const m = /at position (\d+)/.exec(message);
    const pos = m ? Number(m[1]) : text.length;
    const before = text.slice(0, pos).split('\n');
    const line = before.length;
    const col = (before.at(-1)?.length ?? 0) + 1;
    throw new ConfigError(file, [
      `line ${line}, column ${col}: ${message.replace(/ in JSON at position \d+.*$/, '')}`,
    ]);
  }
}
