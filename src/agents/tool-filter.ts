import { requireCjs } from '../shared/require-cjs.js';

const picomatch = requireCjs('picomatch') as typeof import('picomatch');

import type { Tool } from '../tools/tool.js';

/** The tool-related keys of an AGENT.md. */
export interface ToolFilterSpec {
  /** Allow-list of names or globs; `undefined` = the built-ins plus the named servers' tools. */
  tools?: readonly string[];
  disallowedTools: readonly string[];
  /** Upstream servers the agent may use (their tools have source `mcp:<server>`). */
  mcpServers: readonly string[];
}

const GLOB = /[*?[\]{}!]/;

/** A test of names against exact names and globs (picomatch, dot files included). */
export function matcher(patterns: readonly string[]): (name: string) => boolean {
  const exact = new Set(patterns.filter((p) => !GLOB.test(p)));
  const globs = patterns.filter((p) => GLOB.test(p)).map((p) => picomatch(p, { dot: true }));
  return (name) => exact.has(name) || globs.some((m) => m(name));
}

/** True for the built-in tools (the `builtin` tool set: files, shell, HTTP, memory, notify). */
export function isBuiltin(tool: Pick<Tool, 'source' | 'toolsets'>): boolean {
  return tool.source === 'builtin' || tool.toolsets.includes('builtin');
}

/**
 * The filter an agent's calls carry (`CallerContext.allowTool`), compiled once:
 * - a tool of an upstream server (`mcp:<server>`) needs the server in `mcp_servers`, whatever `tools` says;
 * - with `tools`, a tool must match one of its names or globs; without it, the built-ins and the
 *   named servers' tools pass (computer and plugin tools must be listed);
 * - a tool matching `disallowedTools` never passes.
 */
export function compileToolFilter(spec: ToolFilterSpec): (name: string, tool: Tool) => boolean {
  const servers = new Set(spec.mcpServers);
  const listed = spec.tools ? matcher(spec.tools) : undefined;
  const refused = matcher(spec.disallowedTools);
  return (name, tool) => {
    if (refused(name)) return false;
    const upstream = tool.source.startsWith('mcp:') ? tool.source.slice(4) : undefined;
    if (upstream !== undefined && !servers.has(upstream)) return false;
    if (listed) return listed(name);
    return upstream !== undefined || isBuiltin(tool);
  };
}

/**
 * Why a tool is outside an agent's set, in words for the model and the log
 * (`undefined` when the filter lets it through).
 */
export function refusalReason(
  spec: ToolFilterSpec,
  name: string,
  tool: Tool | undefined,
): string | undefined {
  if (!tool) return 'there is no tool with that name';
  if (matcher(spec.disallowedTools)(name)) return "it is in the agent's disallowedTools";
  const upstream = tool.source.startsWith('mcp:') ? tool.source.slice(4) : undefined;
  if (upstream !== undefined && !spec.mcpServers.includes(upstream)) {
    return `it belongs to server "${upstream}", which the agent's mcp_servers does not name`;
  }
  if (spec.tools && !matcher(spec.tools)(name)) return "it is not in the agent's tools allow-list";
  if (!spec.tools && upstream === undefined && !isBuiltin(tool)) {
    return 'it is not a built-in tool and the agent has no tools allow-list naming it';
  }
  return undefined;
}
