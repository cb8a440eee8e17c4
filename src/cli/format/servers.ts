import { requireCjs } from '../../shared/require-cjs.js';

const picomatch = requireCjs('picomatch') as typeof import('picomatch');

import { sanitizeGlob } from '../../integrations/naming.js';
import type { PluginStatus } from '../../integrations/plugins.js';
import type { IntegrationServerStatus, IntegrationsService } from '../../integrations/service.js';
import { PaddockError } from '../../shared/errors.js';
import type { ContentBlock, Tool, ToolResult } from '../../tools/tool.js';

/** Data for `--json` plus the text a person reads. */
export interface Rendered<T> {
  data: T;
  text: string;
}

/** One tool as `paddock servers tools` lists it. */
export interface ToolSummary {
  name: string;
  upstreamName: string;
  title?: string;
  description: string;
  readOnly: boolean;
  /** SHA-256 of the tool's canonical definition (for `pins` in mcp_servers.yaml). */
  hash: string | null;
}

/** `paddock servers list`: every configured server and plugin with its state. */
export function serversList(
  service: IntegrationsService,
): Rendered<{ servers: IntegrationServerStatus[]; plugins: PluginStatus[] }> {
  const servers = service.servers();
  const plugins = service.plugins();
  const rows = servers.map((s) => [
    s.name,
    s.transport,
    s.startup,
    s.state,
    String(s.registeredTools) + (s.toolsFrom === 'cache' ? ' (cached)' : ''),
    String(s.restarts),
    s.lastError ?? '',
  ]);
  const parts: string[] = [];
  parts.push(
    servers.length > 0
      ? table(['SERVER', 'TRANSPORT', 'STARTUP', 'STATE', 'TOOLS', 'RESTARTS', 'LAST ERROR'], rows)
      : 'No MCP servers configured (add them to .paddock/mcp_servers.yaml).',
  );
  if (plugins.length > 0) {
    parts.push(
      table(
        ['PLUGIN', 'STATE', 'TOOLS', 'ERROR'],
        plugins.map((p) => [p.module, p.state, p.tools.join(', '), p.error ?? '']),
      ),
    );
  }
  return { data: { servers, plugins }, text: parts.join('\n\n') };
}

/**
 * `paddock servers tools <server>`: the server's tools as registered. When its list is not
 * known yet (a lazy server without a cache entry) it is started and listed, bounded by
 * `timeoutMs` (default: the server's own `timeoutMs` plus a second).
 */
export async function serverTools(
  service: IntegrationsService,
  server: string,
  options: { timeoutMs?: number } = {},
): Promise<Rendered<ToolSummary[]>> {
  const config = service.pool.config(server); // NOT_FOUND for an unknown server
  if (!config.enabled) {
    throw new PaddockError(
      'NOT_RUNNING',
      `MCP server "${server}" is disabled in mcp_servers.yaml; enable it to list its tools.`,
    );
  }
  const source = `mcp:${server}`;
  if (!service.tools().some((t) => t.source === source)) {
    await service.refreshTools(server, Date.now() + (options.timeoutMs ?? config.timeoutMs + 1000));
  }
  const data = service
    .tools()
    .filter((t) => t.source === source)
    .map(summary);
  if (data.length > 0) {
    const rows = data.map((t) => [
      t.name,
      t.upstreamName,
      (t.hash ?? '').slice(0, 16),
      firstLine(t.description),
    ]);
    const stale = Object.keys(config.permissions).filter((pattern) => {
      const matches = picomatch(`${config.prefix}_${sanitizeGlob(pattern) || '*'}`, { dot: true });
      return !data.some((t) => matches(t.name));
    });
    const warning =
      stale.length === 0
        ? ''
        : `\n\nwarning: permissions in mcp_servers.yaml name tools "${server}" does not serve: ${stale.join(', ')}. ` +
          'They allow nothing; rename them to tools listed above.';
    return { data, text: table(['TOOL', 'UPSTREAM NAME', 'HASH', 'DESCRIPTION'], rows) + warning };
  }
  const lastError = service.servers().find((s) => s.name === server)?.lastError;
  return { data, text: `MCP server "${server}" lists no tools${lastError ? ` (${lastError})` : ''}.` };
}

/** `paddock servers logs <server>`: its last stderr lines, oldest first. */
export function serverLogs(service: IntegrationsService, server: string): Rendered<string[]> {
  const lines = service.logs(server);
  return {
    data: lines,
    text: lines.length > 0 ? lines.join('\n') : `No output from MCP server "${server}" yet.`,
  };
}

/**
 * Parses `paddock servers call <server>_<tool> JSON`: the JSON must be an object (absent or
 * empty means `{}`). The lead's CLI routes the call through the gateway.
 */
export function parseToolCall(
  name: string,
  json: string | undefined,
): { name: string; input: Record<string, unknown> } {
  if (!name)
    throw new PaddockError(
      'INVALID_ARGUMENT',
      'Give the tool to call, e.g. `paddock servers call everything_echo \'{"message":"hi"}\'`.',
    );
  if (json === undefined || json.trim() === '') return { name, input: {} };
  let input: unknown;
  try {
    input = JSON.parse(json);
  } catch (e) {
    throw new PaddockError(
      'INVALID_ARGUMENT',
      `The arguments are not valid JSON (${(e as Error).message}); quote them for the shell, e.g. '{"message":"hi"}'.`,
    );
  }
  if (input === null || typeof input !== 'object' || Array.isArray(input)) {
    throw new PaddockError(
      'INVALID_ARGUMENT',
      'The arguments must be a JSON object, e.g. \'{"message":"hi"}\'.',
    );
  }
  return { name, input: input as Record<string, unknown> };
}

/** Text for a tool result: structured content as JSON, text blocks as they are, other blocks summarised. */
export function renderToolResult(result: ToolResult): string {
  const parts: string[] = [];
  if (result.structured) parts.push(JSON.stringify(result.structured, null, 2));
  else for (const block of result.content ?? []) parts.push(renderBlock(block));
  const body = parts.join('\n');
  return result.isError ? `The tool reported an error:\n${body}` : body;
}

/** Text for a failed call: `CODE: message`. */
export function renderError(error: PaddockError): string {
  return `${error.code}: ${error.message}`;
}

function renderBlock(block: ContentBlock): string {
  if (block.type === 'text' && typeof block.text === 'string') return block.text;
  const mime = typeof block.mimeType === 'string' ? ` ${block.mimeType}` : '';
  const size = typeof block.data === 'string' ? ` ${Math.floor((block.data.length * 3) / 4)} bytes` : '';
  const uri = typeof block.uri === 'string' ? ` ${block.uri}` : '';
  return `[${block.type}${mime}${size}${uri}]`;
}

function summary(tool: Tool): ToolSummary {
  const upstream = (tool as Tool & { upstreamName?: string }).upstreamName ?? tool.name;
  const hash = (tool as Tool & { definitionHash?: string }).definitionHash ?? null;
  return {
    name: tool.name,
    upstreamName: upstream,
    ...(tool.title ? { title: tool.title } : {}),
    description: tool.description,
    readOnly: tool.annotations.readOnlyHint === true,
    hash,
  };
}

function firstLine(text: string): string {
  const line = text.split('\n')[0] ?? '';
  return line.length > 80 ? `${line.slice(0, 79)}…` : line;
}

function table(header: string[], rows: string[][]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const fmt = (cells: string[]) =>
    cells
      .map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i] ?? 0)))
      .join('  ')
      .trimEnd();
  return [fmt(header), ...rows.map(fmt)].join('\n');
}
