import { createHash } from 'node:crypto';

/** Longest tool name Paddock exposes (MCP clients and model APIs cap names at 64). */
export const MAX_TOOL_NAME_LENGTH = 64;

const HASH_LENGTH = 8;

/**
 * Lower-cases and maps every character outside `[a-z0-9_]` to `_`, collapsing runs of `_`
 * and trimming them at both ends: `My-Server` → `my_server`, `get.Issue` → `get_issue`.
 */
export function sanitizeName(text: string): string {
  return text
    .toLowerCase()
    .replace(/[^a-z0-9_]+/g, '_')
    .replace(/_+/g, '_')
    .replace(/^_|_$/g, '');
}

/** Like {@link sanitizeName} but keeps the glob characters `*` and `?` (for permission patterns). */
export function sanitizeGlob(pattern: string): string {
  return pattern
    .toLowerCase()
    .replace(/[^a-z0-9_*?]+/g, '_')
    .replace(/_+/g, '_')
    .replace(/^_|_$/g, '');
}

/**
 * The registry name of upstream tool `tool` of server `server`: `<server>_<tool>`,
 * sanitised. A name longer than {@link MAX_TOOL_NAME_LENGTH} is cut and ends in `_` plus
 * 8 hex digits of a hash of the original server and tool names, so two long names that
 * share a prefix stay distinct. An empty sanitised tool part is replaced by the hash.
 */
export function upstreamToolName(server: string, tool: string): string {
  const prefix = sanitizeName(server);
  const rest = sanitizeName(tool);
  const full = rest ? `${prefix}_${rest}` : '';
  if (full && full.length <= MAX_TOOL_NAME_LENGTH) return full;
  const hash = createHash('sha256').update(`${server}\u0000${tool}`).digest('hex').slice(0, HASH_LENGTH);
  const head = (full || prefix).slice(0, MAX_TOOL_NAME_LENGTH - HASH_LENGTH - 1).replace(/_+$/, '');
  return `${head}_${hash}`;
}

/**
 * Finds names given by more than one source. Returns one entry per clashing name with every
 * origin (e.g. `mcp:github (tool "get-issue")`), in first-seen order.
 */
export function findCollisions(entries: Iterable<{ name: string; origin: string }>): Map<string, string[]> {
  const seen = new Map<string, string[]>();
  for (const { name, origin } of entries) {
    const list = seen.get(name);
    if (list) list.push(origin);
    else seen.set(name, [origin]);
  }
  for (const [name, origins] of seen) if (origins.length < 2) seen.delete(name);
  return seen;
}
