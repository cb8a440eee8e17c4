import type { MemoryStore } from '../../audit/types.js';
import { PaddockError } from '../../shared/errors.js';
import { principalKey } from '../../shared/principal.js';
import { declareTool } from '../define.js';
import { s } from '../schema.js';
import type { CallerContext, Tool } from '../tool.js';

/** Largest memory, in UTF-8 bytes. */
export const MAX_MEMORY_BYTES = 16 * 1024;
/** Most tags on one memory. */
export const MAX_MEMORY_TAGS = 16;

/** Maps a caller to the namespace its memories live in. */
export type NamespaceOf = (caller: CallerContext) => string | Promise<string>;

/** What the memory tools need. */
export interface MemoryToolDeps {
  store: MemoryStore;
  /** Default: `defaultNamespaceOf`. The agent runner passes one that names the agent. */
  namespaceOf?: NamespaceOf;
}

/**
 * The default namespace, by principal: an OAuth client's memories are its own
 * (`client:<id>`), an agent's too (`agent:<name>`); the owner's are keyed by the kind of
 * caller, the text before the first `:` of its `caller` string (`mcp`, `dock`, `cli`), as
 * they always were. Session and job ids are short-lived, so keying on them would lose every
 * memory at the next connection. A tool-channel call carries the principal of the call that
 * started its command, so a script shares its starter's memories.
 */
export function defaultNamespaceOf(caller: CallerContext): string {
  const p = caller.principal;
  if (p.kind === 'client') return `client:${p.id}`;
  if (p.kind === 'agent') return `agent:${p.name}`;
  const who = caller.onBehalfOf ?? caller.caller;
  const colon = who.indexOf(':');
  return colon < 0 ? who : who.slice(0, colon);
}

/**
 * A resolver that gives the principals named in `explicit` (paddock.yaml `principals.memory`,
 * by principal key) the namespace written there, and everyone else what `inner` gives: the
 * one way two principals share memories.
 */
export function explicitNamespaces(
  explicit: Readonly<Record<string, string>>,
  inner: NamespaceOf,
): NamespaceOf {
  if (Object.keys(explicit).length === 0) return inner;
  return (caller) => explicit[principalKey(caller.principal)] ?? inner(caller);
}

/** Resolves the namespace of a call and refuses an empty one. */
export async function resolveNamespace(namespaceOf: NamespaceOf, caller: CallerContext): Promise<string> {
  const namespace = await namespaceOf(caller);
  if (!namespace) {
    throw new PaddockError(
      'INTERNAL',
      `No memory namespace could be derived for caller "${caller.caller}"; report this to the operator.`,
    );
  }
  return namespace;
}

/** save_memory: keep a note for later recall. */
export function createSaveMemoryTool(deps: MemoryToolDeps): Tool {
  const namespaceOf = deps.namespaceOf ?? defaultNamespaceOf;
  return declareTool({
    name: 'save_memory',
    title: 'Save memory',
    description:
      'Store a short note in long-term memory so that a later conversation or run can find it with recall_memory. ' +
      'Save durable facts worth knowing next time (a decision, a preference, where something lives, the outcome of a task), one fact per note, written so it makes sense without this conversation. ' +
      'Do not save secrets such as passwords or tokens, and do not save what you can cheaply look up again. ' +
      'Memories are private to you (your agent, or your client) and survive restarts; tags help later searches.',
    input: s.object(
      {
        content: s.string({
          minLength: 1,
          maxLength: MAX_MEMORY_BYTES,
          description: `The note, at most ${MAX_MEMORY_BYTES} bytes of UTF-8.`,
        }),
        tags: s.array({
          maxItems: MAX_MEMORY_TAGS,
          items: s.string({ minLength: 1, maxLength: 64 }),
          description: 'Optional keywords, e.g. ["deploy", "billing-service"].',
        }),
      },
      { required: ['content'], additionalProperties: false },
    ),
    annotations: { title: 'Save memory', readOnlyHint: false, destructiveHint: false, idempotentHint: false },
    source: 'builtin',
    toolsets: ['builtin'],
    async execute(input, ctx) {
      const { content } = input;
      const bytes = Buffer.byteLength(content, 'utf8');
      if (bytes > MAX_MEMORY_BYTES) {
        throw new PaddockError(
          'LIMIT_EXCEEDED',
          `The note is ${bytes} bytes; the limit is ${MAX_MEMORY_BYTES}. Shorten it or split it into several notes.`,
        );
      }
      const namespace = await resolveNamespace(namespaceOf, ctx.caller);
      const memory = await deps.store.save(namespace, content, input.tags ?? []);
      ctx.logger.debug('memory.saved', { namespace, id: memory.id });
      return {
        structured: {
          id: memory.id,
          namespace: memory.namespace,
          tags: memory.tags,
          createdAt: memory.createdAt,
        },
      };
    },
  });
}
