import { declareTool } from '../define.js';
import { s } from '../schema.js';
import type { Tool } from '../tool.js';
import { defaultNamespaceOf, type MemoryToolDeps, resolveNamespace } from './save-memory.js';

/** Memories returned when the caller names no limit. */
export const DEFAULT_RECALL_LIMIT = 5;
/** Most memories one recall returns. */
export const MAX_RECALL_LIMIT = 50;

/** recall_memory: search the caller's memories. */
export function createRecallMemoryTool(deps: MemoryToolDeps): Tool {
  const namespaceOf = deps.namespaceOf ?? defaultNamespaceOf;
  return declareTool({
    name: 'recall_memory',
    title: 'Recall memory',
    description:
      'Search your long-term memory (notes stored earlier with save_memory) and return the best matches first, each with its id, content, tags, createdAt and a relevance score. ' +
      'Check memory at the start of a task that may have been done before. Search with a few plain keywords; words in tags count extra. ' +
      'An empty query returns the most recent notes. No match is an empty list, not an error.',
    input: s.object(
      {
        query: s.string({
          maxLength: 1000,
          description:
            'Keywords to search for, e.g. "deploy staging credentials location". Empty for the newest notes.',
        }),
        limit: s.integer({
          minimum: 1,
          maximum: MAX_RECALL_LIMIT,
          default: DEFAULT_RECALL_LIMIT,
          description: `Most notes to return (default ${DEFAULT_RECALL_LIMIT}, at most ${MAX_RECALL_LIMIT}).`,
        }),
      },
      { required: ['query'], additionalProperties: false },
    ),
    annotations: { title: 'Recall memory', readOnlyHint: true, idempotentHint: true },
    source: 'builtin',
    toolsets: ['builtin'],
    async execute(input, ctx) {
      const namespace = await resolveNamespace(namespaceOf, ctx.caller);
      const limit = input.limit ?? DEFAULT_RECALL_LIMIT;
      const memories = (await deps.store.recall(namespace, input.query, limit)).map((m) => ({
        id: m.id,
        content: m.content,
        tags: m.tags,
        createdAt: m.createdAt,
        ...(m.score === undefined ? {} : { score: m.score }),
      }));
      return { structured: { namespace, count: memories.length, memories } };
    },
  });
}
