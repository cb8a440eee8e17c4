import { type ProviderEndpoint, postToProvider } from './http.js';
import {
  checkToolCalls,
  type ModelMessage,
  type ModelProvider,
  type ModelRequest,
  type ModelResponse,
  type ModelToolCall,
  malformedResponse,
  malformedToolCall,
  tokenCount,
} from './types.js';

/** The Messages API version Paddock speaks. */
export const ANTHROPIC_VERSION = '2023-06-01';

/** Settings of an Anthropic provider (`baseUrl` e.g. `https://api.anthropic.com`; the key goes in `x-api-key`). */
export interface AnthropicProviderOptions extends ProviderEndpoint {
  /** `max_tokens` of each call (required by the API). */
  maxOutputTokens: number;
}

/**
 * The Anthropic Messages API: tools as `{name, description, input_schema}`, `tool_use`
 * blocks in the answer, results sent back as `tool_result` blocks in a user turn.
 */
export function createAnthropicProvider(options: AnthropicProviderOptions): ModelProvider {
  return {
    name: options.name,
    type: 'anthropic',
    model: options.model,
    async complete(request: ModelRequest): Promise<ModelResponse> {
      const body: Record<string, unknown> = {
        model: options.model,
        max_tokens: options.maxOutputTokens,
        system: request.system,
        messages: request.messages.map(toWire),
      };
      if (request.tools.length > 0) {
        body.tools = request.tools.map((t) => ({
          name: t.name,
          description: t.description,
          input_schema: t.inputSchema,
        }));
      }
      const answer = await postToProvider(
        options,
        '/v1/messages',
        {
          'anthropic-version': ANTHROPIC_VERSION,
          ...(options.apiKey ? { 'x-api-key': options.apiKey } : {}),
        },
        body,
        request.signal,
      );
      return fromWire(options.name, answer);
    },
  };
}

function toWire(message: ModelMessage): Record<string, unknown> {
  switch (message.role) {
    case 'user':
      return { role: 'user', content: message.text };
    case 'assistant':
      return {
        role: 'assistant',
        content: [
          ...(message.text ? [{ type: 'text', text: message.text }] : []),
          ...message.toolCalls.map((c) => ({ type: 'tool_use', id: c.id, name: c.name, input: c.input })),
        ],
      };
    case 'tool':
      return {
        role: 'user',
        content: message.results.map((r) => ({
          type: 'tool_result',
          tool_use_id: r.callId,
          content: r.text,
          ...(r.isError ? { is_error: true } : {}),
        })),
      };
  }
}

function fromWire(provider: string, answer: unknown): ModelResponse {
  const body = answer as {
    content?: unknown;
    stop_reason?: unknown;
    usage?: { input_tokens?: unknown; output_tokens?: unknown };
  };
  if (!body || !Array.isArray(body.content)) throw malformedResponse(provider, 'no content list');
  let text = '';
  const toolCalls: ModelToolCall[] = [];
  for (const entry of body.content as unknown[]) {
    const block = entry as { type?: unknown; text?: unknown; id?: unknown; name?: unknown; input?: unknown };
    if (typeof block !== 'object' || block === null)
      throw malformedResponse(provider, 'a content block is not an object');
    if (block.type === 'text' && typeof block.text === 'string') text += block.text;
    else if (block.type === 'tool_use') {
      const name = typeof block.name === 'string' ? block.name : '';
      if (typeof block.input !== 'object' || block.input === null || Array.isArray(block.input)) {
        throw malformedToolCall(provider, `the input of "${name || '(unnamed)'}" is not a JSON object`);
      }
      toolCalls.push({
        id: typeof block.id === 'string' ? block.id : '',
        name,
        input: block.input as Record<string, unknown>,
      });
    }
  }
  checkToolCalls(provider, toolCalls);
  return {
    text,
    toolCalls,
    usage: {
      inputTokens: tokenCount(body.usage?.input_tokens),
      outputTokens: tokenCount(body.usage?.output_tokens),
    },
    stopReason: typeof body.stop_reason === 'string' ? body.stop_reason : 'unknown',
  };
}
