/**
 * Shared pieces of the computer tools: schema fragments, annotations by kind, and the wrapper
 * that records rejected calls in the computer log (where a user looks for them).
 */
import { isPaddockError, PaddockError } from '../../shared/errors.js';
import type { JsonSchema, Tool, ToolAnnotations, ToolContext, ToolResult } from '../../tools/tool.js';
import type { ComputerSource } from '../manager.js';

/** The reference's kinds: answer (reads), act (changes), transact (destroys or interrupts). */
export type ToolKind = 'answer' | 'act' | 'transact';

/** MCP annotations for a kind. */
export function annotationsFor(kind: ToolKind, title: string): ToolAnnotations {
  switch (kind) {
    case 'answer':
      return { title, readOnlyHint: true, openWorldHint: false };
    case 'act':
      return { title, readOnlyHint: false, destructiveHint: false, openWorldHint: false };
    case 'transact':
      return { title, readOnlyHint: false, destructiveHint: true, openWorldHint: false };
  }
}

/** A guest path property. */
export const guestPathProperty = (description: string): JsonSchema => ({
  type: 'string',
  description,
  maxLength: 1024,
});

/** The requestId property of act tools. */
export const requestIdProperty: JsonSchema = {
  type: 'string',
  description:
    'Optional retry key: repeating a call with the same key and the same arguments returns the first result without doing it twice. Keys are remembered until the server restarts.',
  maxLength: 128,
};

/** An object schema closed to unknown properties. */
export function objectSchema(properties: Record<string, JsonSchema>, required: string[] = []): JsonSchema {
  return { type: 'object', properties, required, additionalProperties: false };
}

/** A tool result carrying structured content. */
export function structured(value: Record<string, unknown>): ToolResult {
  return { structured: value };
}

/** A job id's generation, for audit lineage. */
export function generationOf(jobId: string): number | undefined {
  const m = /^g(\d+)\./.exec(jobId);
  return m ? Number(m[1]) : undefined;
}

/** The definition of one computer tool before wrapping. */
export interface ToolSpec {
  name: string;
  title: string;
  kind: ToolKind;
  description: string;
  inputSchema: JsonSchema;
  toolsets?: string[];
  source?: Tool['source'];
  execute(input: Record<string, unknown>, ctx: ToolContext): Promise<ToolResult>;
}

/**
 * Builds the Tool: failures keep their code and message for the caller, and each rejection is an
 * entry in the computer log (policy denials as `policy.denied`).
 */
export function defineTool(computers: ComputerSource, spec: ToolSpec): Tool {
  return {
    name: spec.name,
    title: spec.title,
    description: spec.description,
    inputSchema: spec.inputSchema,
    annotations: annotationsFor(spec.kind, spec.title),
    source: spec.source ?? 'computer',
    toolsets: spec.toolsets ?? ['computer'],
    async execute(input, ctx) {
      try {
        return await spec.execute(input, ctx);
      } catch (e) {
        const err = isPaddockError(e)
          ? e
          : new PaddockError(
              'INTERNAL',
              `${spec.name} failed unexpectedly; retry, and check the server logs if it persists.`,
            );
        const manager = computers.for(ctx.caller);
        const generation = manager.computer?.generation;
        const fields = generation === undefined ? {} : { generation };
        if (err.code === 'POLICY_DENIED')
          manager.log.add('warn', 'policy.denied', `${spec.name}: ${err.message}`, fields);
        else if (err.code === 'OUTPUT_EXPIRED')
          manager.log.add('debug', 'tool.rejected', `${spec.name}: ${err.code}: ${err.message}`, fields);
        else if (err.code === 'INTERNAL')
          manager.log.add('err', 'tool.failed', `${spec.name}: ${err.message}`, fields);
        else manager.log.add('warn', 'tool.rejected', `${spec.name}: ${err.code}: ${err.message}`, fields);
        throw err;
      }
    },
  };
}

/** Reads an optional string input. */
export function optString(input: Record<string, unknown>, key: string): string | undefined {
  const v = input[key];
  return typeof v === 'string' ? v : undefined;
}

/** Reads an optional integer input with a default. */
export function intOr(input: Record<string, unknown>, key: string, fallback: number): number {
  const v = input[key];
  return typeof v === 'number' && Number.isInteger(v) ? v : fallback;
}
