import { PaddockError } from '../../shared/errors.js';
import type { JsonSchema } from '../../tools/tool.js';

/** A tool as the model sees it: its name, description and input schema, nothing about its source. */
export interface ModelToolSpec {
  name: string;
  description: string;
  inputSchema: JsonSchema;
}

/** A tool call the model asked for. */
export interface ModelToolCall {
  /** The provider's id of the call (echoed back with its result). */
  id: string;
  name: string;
  input: Record<string, unknown>;
}

/** One tool result sent back to the model. */
export interface ModelToolResult {
  callId: string;
  name: string;
  text: string;
  isError: boolean;
}

/** The conversation in a provider-neutral form. */
export type ModelMessage =
  | { role: 'user'; text: string }
  | { role: 'assistant'; text: string; toolCalls: ModelToolCall[] }
  | { role: 'tool'; results: ModelToolResult[] };

/** One model call. */
export interface ModelRequest {
  system: string;
  messages: readonly ModelMessage[];
  tools: readonly ModelToolSpec[];
  /** The run's signal: aborts at the run's wall time or on cancellation (its reason is rethrown). */
  signal: AbortSignal;
}

/** Tokens a call used, as the provider reports them. */
export interface TokenUsage {
  inputTokens: number;
  outputTokens: number;
}

/** The model's answer: text and/or tool calls. No tool calls means a final answer. */
export interface ModelResponse {
  text: string;
  toolCalls: ModelToolCall[];
  usage: TokenUsage;
  /** The provider's stop reason as given (`tool_calls`, `end_turn`, `length` …). */
  stopReason: string;
}

/** A model reached over HTTP in one wire format. */
export interface ModelProvider {
  /** The provider's name in paddock.yaml (`openai`, `anthropic`, `local` …). */
  readonly name: string;
  readonly type: 'openai' | 'anthropic';
  readonly model: string;
  complete(request: ModelRequest): Promise<ModelResponse>;
}

/** `details.reason` of the error thrown for a tool call the run cannot use. */
export const MALFORMED_TOOL_CALL = 'malformed_tool_call';

/** The error for a tool call that cannot be used (no name, arguments that are not a JSON object …). */
export function malformedToolCall(provider: string, what: string): PaddockError {
  return new PaddockError(
    'UPSTREAM_ERROR',
    `The model at provider "${provider}" returned a malformed tool call (${what}), so the run stopped. ` +
      'Retry the run; if it keeps happening, pick a model with reliable tool calling or check that the endpoint speaks this wire format.',
    { reason: MALFORMED_TOOL_CALL },
  );
}

/** The error for a response that does not have the expected shape. */
export function malformedResponse(provider: string, what: string): PaddockError {
  return new PaddockError(
    'UPSTREAM_ERROR',
    `Provider "${provider}" sent a response Paddock cannot read (${what}). Check that its baseUrl and type match the server (openai or anthropic wire format).`,
    { reason: 'malformed_response' },
  );
}

/** Parses the JSON text of tool-call arguments into an object (empty text is `{}`). */
export function parseArguments(provider: string, name: string, text: unknown): Record<string, unknown> {
  if (text === undefined || text === null || text === '') return {};
  if (typeof text === 'object' && !Array.isArray(text)) return text as Record<string, unknown>;
  if (typeof text !== 'string')
    throw malformedToolCall(provider, `the arguments of "${name}" are not a JSON object`);
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw malformedToolCall(
      provider,
      `the arguments of "${name}" are not valid JSON: ${JSON.stringify(text.slice(0, 120))}`,
    );
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw malformedToolCall(provider, `the arguments of "${name}" are not a JSON object`);
  }
  return value as Record<string, unknown>;
}

/** Checks names and ids of a response's tool calls (non-empty, ids unique). */
export function checkToolCalls(provider: string, calls: readonly ModelToolCall[]): void {
  const ids = new Set<string>();
  for (const call of calls) {
    if (!call.name) throw malformedToolCall(provider, 'a call without a tool name');
    if (!call.id) throw malformedToolCall(provider, `the call of "${call.name}" has no id`);
    if (ids.has(call.id)) throw malformedToolCall(provider, `two calls share the id "${call.id}"`);
    ids.add(call.id);
  }
}

/** A non-negative integer from a usage field (0 when absent or odd). */
export function tokenCount(value: unknown): number {
  return typeof value === 'number' && Number.isFinite(value) && value > 0 ? Math.floor(value) : 0;
}
