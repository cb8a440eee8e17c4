/**
 * The lookup stage of the gateway: from a tool name to the tool this caller may call. A name of
 * a configured upstream server that has not listed yet starts that server (within the call's
 * deadline); a tool held for review answers TOOL_QUARANTINED; an unknown or filtered name is a
 * protocol error (NOT_FOUND).
 */
import { PaddockError } from '../shared/errors.js';
import type { ToolRegistry } from './registry.js';
import type { CallerContext, Tool } from './tool.js';

/**
 * Tools that arrive after the start (upstream servers): `settled` resolves once every
 * configured source has listed once; `discover` starts the source a missing tool name belongs
 * to and waits, until `deadline`, for its listing.
 */
export interface LateTools {
  settled(): Promise<void>;
  discover(name: string, deadline: number): Promise<void>;
  /** TOOL_QUARANTINED when `name` is an upstream tool held for a person's review. */
  quarantined?(name: string): Promise<PaddockError | undefined>;
}
/** The tool to call, or why there is none (`protocol`: a JSON-RPC error for MCP clients). */
export type Lookup = { ok: true; tool: Tool } | { ok: false; error: PaddockError; protocol: boolean };

/** Finds the tool `name` names for `caller`. */
export async function lookupTool(
  deps: { registry: ToolRegistry; late?: LateTools | undefined },
  name: string,
  caller: CallerContext,
  deadline: number,
): Promise<Lookup> {
  let tool = deps.registry.get(name);
  if (!tool && deps.late) {
    // a configured server that has not listed yet (cold start): start it within the deadline
    await deps.late.discover(name, deadline).catch(() => undefined);
    tool = deps.registry.get(name);
  }
  if (!tool) {
    const quarantine = await deps.late?.quarantined?.(name).catch(() => undefined);
    if (quarantine) return { ok: false, error: quarantine, protocol: false };
    tool = deps.registry.get(name);
  }
  if (!tool || !reachable(tool, caller) || (caller.allowTool && !caller.allowTool(name, tool))) {
    return {
      ok: false,
      protocol: true,
      error: new PaddockError(
        'NOT_FOUND',
        `Unknown tool "${name}". List the available tools and use one of their names.`,
      ),
    };
  }
  return { ok: true, tool };
}

/** A tool only an MCP App view calls exists for no one else: not listed, and unknown when called. */
export function reachable(tool: Tool, caller: CallerContext): boolean {
  return !tool.appOnly || caller.apps === true;
}
