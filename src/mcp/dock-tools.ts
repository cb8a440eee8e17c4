/**
 * The computer's tools for the dock's WebMCP registration: listed exactly as an MCP client sees
 * them, called through the gateway as the person signed in to the dock (`via: webmcp`). A call
 * from a page is unattended: nobody confirmed it in an MCP client, so `ask` tools are refused
 * (or wait for an approval) like any other unattended caller's.
 */

import { OWNER } from '../shared/principal.js';
import { describeTool } from '../tools/describe.js';
import type { Gateway } from '../tools/gateway.js';
import type { CallerContext, ComputerRef, Tool } from '../tools/tool.js';
import { toCallToolResult, toErrorResult } from './server.js';

/** Only the computer's own tools are offered to a page. */
const computerOnly = (_name: string, tool: Tool) => tool.source === 'computer';

/** What the dock's `DockTools` needs, built on the gateway. */
export function dockToolsFromGateway(gateway: Gateway, caller: string, target?: () => ComputerRef) {
  const context = (signal?: AbortSignal): CallerContext => ({
    caller,
    // the person signed in to the dock
    principal: OWNER,
    via: 'webmcp',
    attended: false,
    allowTool: computerOnly,
    // the page acts on the computer it watches
    ...(target ? { computer: target() } : {}),
    ...(signal ? { signal } : {}),
  });
  return {
    list() {
      return gateway.listTools(context()).map((tool) => {
        const { outputSchema: _omit, ...listed } = describeTool(tool);
        return listed as {
          name: string;
          title?: string;
          description: string;
          inputSchema: Record<string, unknown>;
          annotations?: Record<string, unknown>;
        };
      });
    },
    async call(name: string, args: Record<string, unknown>, signal: AbortSignal) {
      const outcome = await gateway.call(name, args, context(signal));
      if (!outcome.ok) return toErrorResult(outcome.error);
      return toCallToolResult(
        outcome.result,
        gateway.listTools(context()).find((t) => t.name === name),
      );
    },
  };
}
