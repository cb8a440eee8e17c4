import type { Tool } from './tool.js';

/** The MCP description of one tool: its protocol fields, without the handler or Paddock's own fields. */
export function describeTool(tool: Tool): Record<string, unknown> {
  return {
    name: tool.name,
    ...(tool.title ? { title: tool.title } : {}),
    description: tool.description,
    inputSchema: tool.inputSchema,
    ...(tool.outputSchema ? { outputSchema: tool.outputSchema } : {}),
    annotations: tool.annotations,
  };
}
