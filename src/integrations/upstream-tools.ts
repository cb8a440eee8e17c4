import { upstreamCallAttributes } from '../telemetry/attributes.js';
import { declareTool } from '../tools/define.js';
import { s } from '../tools/schema.js';
import type { Tool, ToolAnnotations } from '../tools/tool.js';
import type { McpClientPool, UpstreamToolDef } from './client-pool.js';
import type { McpServerConfig } from './load-config.js';
import { upstreamToolName } from './naming.js';
import { definitionHash } from './tool-pins.js';

const ANNOTATION_KEYS = [
  'title',
  'readOnlyHint',
  'destructiveHint',
  'idempotentHint',
  'openWorldHint',
] as const;

/** An upstream tool as a registry {@link Tool}, with the upstream name it forwards to. */
export interface UpstreamTool extends Tool {
  upstreamName: string;
  /** SHA-256 of the canonical definition (what a pin holds). */
  definitionHash: string;
}

/**
 * Wraps the listed tools of one server as {@link Tool}s named `<server>_<tool>`, keeping
 * description, input and output schemas and annotations. Source `mcp:<server>`; tool sets
 * `integrations`, the server's name and its configured `toolsets`. `execute` forwards with
 * the context's signal and deadline (the gateway validated the input already).
 */
export function upstreamTools(
  config: McpServerConfig,
  defs: readonly UpstreamToolDef[],
  pool: McpClientPool,
  /** Spans of upstream calls may carry their inputs (telemetry.otlp.includeInputs). */
  includeInputs = false,
): UpstreamTool[] {
  const toolsets = [...new Set(['integrations', config.name, ...config.toolsets])];
  return defs.map((def) => {
    const annotations: ToolAnnotations = {};
    for (const key of ANNOTATION_KEYS) {
      const v = def.annotations?.[key];
      if (key === 'title' ? typeof v === 'string' : typeof v === 'boolean')
        (annotations as Record<string, unknown>)[key] = v;
    }
    const title = def.title ?? annotations.title;
    const tool = declareTool({
      name: upstreamToolName(config.name, def.name),
      ...(title !== undefined ? { title } : {}),
      description:
        def.description?.trim() ||
        `Tool "${def.name}" of the MCP server "${config.name}" (no description given).`,
      // the server's own schema, listed as it sent it
      input: s.json<Record<string, unknown>>(def.inputSchema),
      ...(def.outputSchema ? { outputSchema: def.outputSchema } : {}),
      annotations,
      source: `mcp:${config.name}`,
      toolsets,
      execute: async (input, ctx) => {
        // the MCP client span: the call to the upstream server, a child of the gateway's span
        const span = ctx.span?.child(`tools/call ${def.name}`, {
          kind: 'client',
          attributes: upstreamCallAttributes(config.name, def.name, config.transport, input, includeInputs),
        });
        try {
          const result = await pool.callTool(config.name, def.name, input, {
            signal: ctx.signal,
            deadline: ctx.deadline,
            onProgress: (p) => ctx.progress(p),
          });
          span?.end({ errorType: result.isError ? 'tool_error' : null });
          return result;
        } catch (e) {
          span?.end({
            errorType: (e as { code?: string }).code ?? 'INTERNAL',
            message: (e as Error).message,
          });
          throw e;
        }
      },
    });
    return { ...tool, upstreamName: def.name, definitionHash: definitionHash(def) };
  });
}
