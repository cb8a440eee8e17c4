/**
 * The public entry for plugin modules (`import { defineTool } from 'paddock/plugin'`): a
 * plugin in `.paddock/plugins/` exports tools made with {@link defineTool}; they run
 * in-process with the same context as built-in tools (policy, logger, abort signal).
 */

/** zod, so a plugin needs no dependency of its own to describe its input. */
export { z } from 'zod';
export {
  type BrandedToolResult,
  defineTool,
  type PluginReturn,
  type PluginTool,
  type ToolSpec,
  toolResult,
} from './integrations/define-tool.js';
export { type ErrorCode, PaddockError } from './shared/errors.js';
export type { ContentBlock, JsonSchema, ToolAnnotations, ToolContext, ToolResult } from './tools/tool.js';
