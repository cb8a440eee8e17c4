import { z } from 'zod';
import { PaddockError } from '../shared/errors.js';
import type {
  ContentBlock,
  JsonSchema,
  ToolAnnotations,
  ToolContext,
  ToolDescriptor,
  ToolResult,
} from '../tools/tool.js';

/** Brand of tools made by {@link defineTool}; a registered symbol, so two copies of this module agree. */
const PLUGIN_TOOL = Symbol.for('paddock.plugin-tool');
const TOOL_RESULT = Symbol.for('paddock.tool-result');

/** A name a plugin tool may have: it is exposed as is. */
export const PLUGIN_TOOL_NAME = /^[a-z0-9_]{1,64}$/;

/** A full result (content blocks, `isError`…) returned from a plugin's `execute`; make it with {@link toolResult}. */
export type BrandedToolResult = ToolResult & { readonly [TOOL_RESULT]: true };

/** What `execute` may return: with an `output` schema, an object of that shape; else text, an object, or a full result. */
export type PluginReturn<O> = O extends z.ZodObject
  ? z.input<O> | BrandedToolResult
  : string | Record<string, unknown> | BrandedToolResult | undefined;

/** What a plugin author writes: a zod input schema and a function. */
export interface ToolSpec<I extends z.ZodObject, O extends z.ZodObject | undefined = undefined> {
  /** Exposed as is: `[a-z0-9_]`, at most 64 characters; must not collide with another tool. */
  name: string;
  title?: string;
  /** For a model: what the tool does, when to use it, what to check first. */
  description: string;
  /** Input schema; its JSON Schema (additional properties refused) is what callers see. */
  input: I;
  /** Optional output schema: `execute` then returns an object of this shape (becomes structured content). */
  output?: O;
  annotations?: ToolAnnotations;
  /** Runs in-process with the same context as built-ins (policy, logger, signal, deadline). */
  execute(input: z.output<I>, ctx: ToolContext): PluginReturn<O> | Promise<PluginReturn<O>>;
}

/** A tool made by {@link defineTool}: what clients see of it, before {@link loadPlugins} gives it a source. */
export interface PluginTool extends ToolDescriptor {
  readonly [PLUGIN_TOOL]: true;
  /** Validates the input with zod, runs `execute`, shapes the result. Errors thrown by `execute` pass through. */
  run(input: Record<string, unknown>, ctx: ToolContext): Promise<ToolResult>;
}

/**
 * Defines an in-process tool. The zod `input` becomes the tool's JSON Schema (draft-07,
 * `additionalProperties: false` unless the object is `.loose()`); `execute` receives the
 * parsed input (defaults applied) and the tool context. Return a string (text), an object
 * (structured content, checked against `output` when given) or {@link toolResult}.
 *
 * @example
 * export default [defineTool({
 *   name: 'greet', description: 'Greets someone by name.',
 *   input: z.object({ name: z.string() }),
 *   execute: ({ name }) => `Hello, ${name}!`,
 * })];
 */
export function defineTool<I extends z.ZodObject, O extends z.ZodObject | undefined = undefined>(
  spec: ToolSpec<I, O>,
): PluginTool {
  if (typeof spec?.name !== 'string' || !PLUGIN_TOOL_NAME.test(spec.name)) {
    throw new PaddockError(
      'INVALID_ARGUMENT',
      `defineTool: name ${JSON.stringify(spec?.name)} is invalid; use 1–64 characters of a-z, 0-9 and _.`,
    );
  }
  if (typeof spec.description !== 'string' || !spec.description.trim()) {
    throw new PaddockError(
      'INVALID_ARGUMENT',
      `defineTool(${spec.name}): give a description written for a model.`,
    );
  }
  if (!isZodObject(spec.input)) {
    throw new PaddockError(
      'INVALID_ARGUMENT',
      `defineTool(${spec.name}): input must be a zod object schema (z.object({...})).`,
    );
  }
  if (typeof spec.execute !== 'function') {
    throw new PaddockError('INVALID_ARGUMENT', `defineTool(${spec.name}): execute must be a function.`);
  }
  const output = spec.output;
  if (output !== undefined && !isZodObject(output)) {
    throw new PaddockError(
      'INVALID_ARGUMENT',
      `defineTool(${spec.name}): output must be a zod object schema when given.`,
    );
  }
  return {
    [PLUGIN_TOOL]: true,
    name: spec.name,
    ...(spec.title !== undefined ? { title: spec.title } : {}),
    description: spec.description,
    inputSchema: toJsonSchema(spec.input, 'input'),
    ...(output ? { outputSchema: toJsonSchema(output, 'output') } : {}),
    annotations: { ...spec.annotations },
    async run(input, ctx) {
      const parsed = spec.input.safeParse(input);
      if (!parsed.success) {
        throw new PaddockError(
          'INVALID_ARGUMENT',
          `Invalid arguments for ${spec.name}: ${issues(parsed.error)}. Fix them and retry.`,
        );
      }
      const value = await spec.execute(parsed.data as z.output<I>, ctx);
      return shapeResult(spec.name, value, output);
    },
  };
}

/** Marks a full {@link ToolResult} (content blocks, `isError`) as a plugin's return value. */
export function toolResult(result: ToolResult): BrandedToolResult {
  return { ...result, [TOOL_RESULT]: true } as BrandedToolResult;
}

/** True for a tool made by {@link defineTool} (from any copy of this module). */
export function isPluginTool(value: unknown): value is PluginTool {
  return (
    typeof value === 'object' && value !== null && (value as Record<symbol, unknown>)[PLUGIN_TOOL] === true
  );
}

/** True for an object shaped like a {@link ToolSpec} (a plugin that did not import `defineTool`). */
export function isToolSpec(value: unknown): value is ToolSpec<z.ZodObject> {
  if (typeof value !== 'object' || value === null || isPluginTool(value)) return false;
  const v = value as Record<string, unknown>;
  return typeof v.name === 'string' && typeof v.execute === 'function' && isZodObject(v.input);
}

function shapeResult(name: string, value: unknown, output: z.ZodObject | undefined): ToolResult {
  if (
    typeof value === 'object' &&
    value !== null &&
    (value as Record<symbol, unknown>)[TOOL_RESULT] === true
  ) {
    const { structured, content, isError } = value as ToolResult;
    return {
      ...(structured ? { structured } : {}),
      ...(content ? { content } : {}),
      ...(isError ? { isError } : {}),
    };
  }
  if (output) {
    const parsed = output.safeParse(value);
    if (!parsed.success) {
      throw new PaddockError(
        'INTERNAL',
        `Plugin tool "${name}" returned a result that does not match its output schema (${issues(parsed.error)}); fix the plugin.`,
      );
    }
    return { structured: parsed.data as Record<string, unknown> };
  }
  if (value === undefined || value === null) return { content: [] };
  if (typeof value === 'string') return { content: [text(value)] };
  if (typeof value === 'object' && !Array.isArray(value))
    return { structured: value as Record<string, unknown> };
  return { content: [text(JSON.stringify(value))] };
}

function text(t: string): ContentBlock {
  return { type: 'text', text: t };
}

function issues(error: z.ZodError): string {
  return error.issues
    .map((i) => `${i.path.length ? i.path.join('.') : '(arguments)'}: ${i.message}`)
    .join('; ');
}

function isZodObject(value: unknown): value is z.ZodObject {
  return (
    value instanceof z.ZodObject ||
    (typeof value === 'object' &&
      value !== null &&
      (value as { _zod?: { def?: { type?: string } } })._zod?.def?.type === 'object')
  );
}

/** zod → JSON Schema (draft-07, no `$schema`), closing every plain object to additional properties. */
function toJsonSchema(schema: z.ZodObject, io: 'input' | 'output'): JsonSchema {
  const js = z.toJSONSchema(schema, { io, target: 'draft-7', unrepresentable: 'any' }) as JsonSchema;
  delete js.$schema;
  closeObjects(js);
  return js;
}

function closeObjects(node: unknown): void {
  if (Array.isArray(node)) {
    for (const n of node) closeObjects(n);
    return;
  }
  if (typeof node !== 'object' || node === null) return;
  const s = node as Record<string, unknown>;
  if (s.type === 'object' && s.properties && !('additionalProperties' in s)) s.additionalProperties = false;
  for (const key of ['properties', 'definitions', '$defs', 'patternProperties']) {
    const map = s[key];
    if (map && typeof map === 'object') for (const v of Object.values(map)) closeObjects(v);
  }
  for (const key of ['items', 'prefixItems', 'anyOf', 'oneOf', 'allOf', 'not', 'additionalProperties']) {
    if (key in s) closeObjects(s[key]);
  }
}
