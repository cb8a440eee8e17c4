/**
 * Shared pieces of the computer tools: schema fragments, annotations by kind, and the wrapper
 * that records rejected calls in the computer log (where a user looks for them).
 */
import { isPaddockError, PaddockError } from '../../shared/errors.js';
import { declareTool } from '../../tools/define.js';
import { type ObjectOf, type Properties, type Schema, s } from '../../tools/schema.js';
import type { Tool, ToolAnnotations, ToolContext, ToolDefinition, ToolResult } from '../../tools/tool.js';
import { generationOfId } from '../ids.js';
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
export const guestPathProperty = (description: string): Schema<string> =>
  s.string({ description, maxLength: 1024 });

/** The requestId property of act tools. */
export const requestIdProperty = s.string({
  description:
    'Optional retry key: repeating a call with the same key and the same arguments returns the first result without doing it twice. Keys are remembered until the server restarts.',
  maxLength: 128,
});

/** An input object closed to unknown properties, its required list always written (the reference's shape). */
export function inputObject<P extends Properties, const R extends readonly (keyof P & string)[]>(
  properties: P,
  required: R,
): Schema<ObjectOf<P, R[number]>> {
  return s.object(properties, { required, additionalProperties: false });
}

/** A tool result carrying structured content. */
export function structured(value: Record<string, unknown>): ToolResult {
  return { structured: value };
}

/**
 * Notes what a call acts on for its audit row, from its input or its result: a job id
 * (`jobId`), a terminal id (`terminalId`, or `id` when it is one) or a `generation`.
 */
function noteLineage(ctx: ToolContext, fields: Record<string, unknown>): void {
  const job = fields.jobId;
  const jobGeneration = generationOfId(job);
  if (typeof job === 'string' && jobGeneration !== undefined) {
    ctx.noteComputer({ generation: jobGeneration, jobId: job });
    return;
  }
  const generation =
    generationOfId(fields.terminalId) ??
    generationOfId(fields.id) ??
    (typeof fields.generation === 'number' ? fields.generation : undefined);
  if (generation !== undefined) ctx.noteComputer({ generation });
}

/** The definition of one computer tool: annotations come from its kind, source and tool sets default to `computer`. */
export interface ComputerToolSpec<I> extends Omit<ToolDefinition<I>, 'annotations' | 'source' | 'toolsets'> {
  title: string;
  kind: ToolKind;
  toolsets?: string[];
  source?: Tool['source'];
  /**
   * The tool takes a `requestId` (an act tool): a repeat with the same key and arguments answers
   * the first result without a second effect; other arguments are IDEMPOTENCY_CONFLICT.
   */
  idempotent?: boolean;
}

/**
 * Declares a computer tool: its audit row names the generation and job it acts on (from its
 * input and its result), an `idempotent` tool answers a repeated `requestId` with its first
 * result, failures keep their code and message for the caller, and each rejection is an entry
 * in the computer log (policy denials as `policy.denied`).
 */
export function computerTool<I>(computers: ComputerSource, spec: ComputerToolSpec<I>): Tool {
  const { kind, source, toolsets, execute, idempotent, ...fields } = spec;
  return declareTool<I>({
    ...fields,
    annotations: annotationsFor(kind, spec.title),
    source: source ?? 'computer',
    toolsets: toolsets ?? ['computer'],
    async execute(input, ctx) {
      const args = input as Record<string, unknown>;
      noteLineage(ctx, args);
      try {
        const run = () => execute(input, ctx);
        const result = idempotent
          ? await computers
              .for(ctx.caller)
              .idempotency.run(spec.name, args.requestId as string | undefined, args, run)
          : await run();
        if (result.structured) noteLineage(ctx, result.structured);
        return result;
      } catch (e) {
        const err = isPaddockError(e)
          ? e
          : new PaddockError(
              'INTERNAL',
              `${spec.name} failed unexpectedly; retry, and check the server logs if it persists.`,
            );
        const manager = computers.for(ctx.caller);
        const generation = manager.computer?.generation;
        const logFields = generation === undefined ? {} : { generation };
        if (err.code === 'POLICY_DENIED')
          manager.log.add('warn', 'policy.denied', `${spec.name}: ${err.message}`, logFields);
        else if (err.code === 'OUTPUT_EXPIRED')
          manager.log.add('debug', 'tool.rejected', `${spec.name}: ${err.code}: ${err.message}`, logFields);
        else if (err.code === 'INTERNAL')
          manager.log.add('err', 'tool.failed', `${spec.name}: ${err.message}`, logFields);
        else manager.log.add('warn', 'tool.rejected', `${spec.name}: ${err.code}: ${err.message}`, logFields);
        throw err;
      }
    },
  });
}
