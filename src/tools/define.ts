import type { Tool, ToolDefinition } from './tool.js';

/**
 * The one way Paddock declares its own tools (plugins use the public `defineTool` of
 * src/plugin.ts, which ends here too): the registry form of a {@link ToolDefinition}. Its input
 * schema is listed as the same object, and `execute` receives the input the gateway validated
 * against that schema.
 *
 * @example
 * declareTool({
 *   name: 'greet', description: 'Greets someone by name.', annotations: { readOnlyHint: true },
 *   source: 'builtin', toolsets: ['builtin'],
 *   input: s.object({ name: s.string({ maxLength: 64 }) }, { required: ['name'], additionalProperties: false }),
 *   execute: async ({ name }) => ({ content: [{ type: 'text', text: `Hello, ${name}!` }] }),
 * });
 */
export function declareTool<I>(definition: ToolDefinition<I>): Tool {
  const {
    name,
    title,
    description,
    input,
    outputSchema,
    annotations,
    source,
    toolsets,
    execute,
    policyActions,
    appOnly,
  } = definition;
  return {
    name,
    ...(title !== undefined ? { title } : {}),
    description,
    inputSchema: input,
    ...(outputSchema !== undefined ? { outputSchema } : {}),
    annotations,
    source,
    toolsets,
    // the gateway validated the input against `input` before any call reaches here
    execute: (value, ctx) => execute(value as I, ctx),
    ...(appOnly ? { appOnly: true } : {}),
    ...(policyActions
      ? { policyActions: (value: Record<string, unknown>) => policyActions(value as I) }
      : {}),
  };
}
