/**
 * The MCP Apps extension (`io.modelcontextprotocol/ui`) as Paddock serves it: which clients
 * declared it, which tools show the computer view, and the `_meta` a declaring client gets on
 * each tool. A client that did not declare the extension sees every tool exactly as before (no
 * `_meta`, no view tools), so nothing here changes a plain client's listing.
 */
import { EXTENSION_ID, getUiCapability, RESOURCE_MIME_TYPE } from '@modelcontextprotocol/ext-apps/server';
import type { Tool } from '../../tools/tool.js';

/** The extension's id in capabilities, and the mime type of its HTML views. */
export { EXTENSION_ID as APPS_EXTENSION, RESOURCE_MIME_TYPE as VIEW_MIME_TYPE };

/** The one view: the computer (terminal, job output, preview, approval card). */
export const COMPUTER_VIEW_URI = 'ui://paddock/computer.html';

/** The model's tools whose result the host shows in the computer view. */
export const TOOLS_WITH_VIEW: ReadonlySet<string> = new Set([
  'launch_computer',
  'get_computer_status',
  'run_command',
  'navigate_preview',
]);

/** The key older hosts read the view's URI from (the extension keeps both spellings). */
const LEGACY_URI_KEY = 'ui/resourceUri';

/** Whether client capabilities declare MCP Apps with the HTML profile Paddock's view needs. */
export function declaresApps(capabilities: unknown): boolean {
  const ui = getUiCapability(capabilities as Parameters<typeof getUiCapability>[0]);
  // a malformed declaration (a string where the list belongs) is no declaration
  const types: unknown = ui?.mimeTypes;
  return Array.isArray(types) && types.includes(RESOURCE_MIME_TYPE);
}

/**
 * The `_meta` of a tool listed to a client that declared MCP Apps: the view of the tools that
 * show one, and `visibility: ["app"]` for the tools only the view calls (a conforming host keeps
 * them from the model and lets only this server's view call them).
 */
export function appToolMeta(tool: Pick<Tool, 'name' | 'appOnly'>): Record<string, unknown> | undefined {
  if (tool.appOnly) return { ui: { resourceUri: COMPUTER_VIEW_URI, visibility: ['app'] } };
  if (TOOLS_WITH_VIEW.has(tool.name))
    return { ui: { resourceUri: COMPUTER_VIEW_URI }, [LEGACY_URI_KEY]: COMPUTER_VIEW_URI };
  return undefined;
}
