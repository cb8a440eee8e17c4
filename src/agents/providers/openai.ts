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
  parseArguments,
  tokenCount,
} from './types.js';

/** Settings of an OpenAI-compatible provider (the key goes in `authorization: Bearer`). */
export interface OpenAiProviderOptions extends ProviderEndpoint {
  /** Sent as `max_completion_tokens` when set. */
  maxOutputTokens?: number;
}

/**
 * Chat completions in the OpenAI wire format (also spoken by many hosted and local servers):
 * tools are sent as `functions` with their JSON schemas; `tool_calls` come back with JSON-text
 * arguments, which must parse to an object (otherwise the call is malformed).
 */
export function createOpenAiProvider(options: OpenAiProviderOptions): ModelProvider {
  return {
    name: options.name,
    type: 'openai',
    model: options.model,
    async complete(request: ModelRequest): Promise<ModelResponse> {
      const body: Record<string, unknown> = {
        model: options.model,
        messages: [{ role: 'system', content: request.system }, ...request.messages.flatMap(toWire)],
      };
      if (request.tools.length > 0) {
        body.tools = request.tools.map((t) => ({
          type: 'function',
          function: { name: t.name, description: t.description, parameters: t.inputSchema },
        }));
        body.tool_choice = 'auto';
      }
      if (options.maxOutputTokens !== undefined) body.max_completion_tokens = options.maxOutputTokens;
      const answer = await postToProvider(
        options,
        '/chat/completions',
        options.apiKey ? { authorization: `Bearer ${options.apiKey}` } : {},
        body,
        request.signal,
      );
      return fromWire(options.name, answer);
    },
  };
}

function toWire(message: ModelMessage): Record<string, unknown>[] {
  switch (message.role) {
    case 'user':
      return [{ role: 'user', content: message.text }];
    case 'assistant':
      return [
        {
          role: 'assistant',
          content: message.text || null,
          ...(message.toolCalls.length > 0
            ? {
                tool_calls: message.toolCalls.map((c) => ({
                  id: c.id,
                  type: 'function',
                  function: { name: c.name, arguments: JSON.stringify(c.input) },
                })),
              }
            : {}),
        },
      ];
    case 'tool':
      return message.results.map((r) => ({ role: 'tool', tool_call_id: r.callId, content: r.text }));
  }
}

function fromWire(provider: string, answer: unknown): ModelResponse {
  const body = answer as {
    choices?: { message?: { content?: unknown; tool_calls?: unknown }; finish_reason?: unknown }[];
    usage?: { prompt_tokens?: unknown; completion_tokens?: unknown };
  };
  const choice = Array.isArray(body?.choices) ? body.choices[0] : undefined;
  if (!choice || typeof choice.message !== 'object' || choice.message === null) {
    throw malformedResponse(provider, 'no choices[0].message');
  }
  const content = choice.message.content;
  const text = typeof content === 'string' ? content : Array.isArray(content) ? joinParts(content) : '';
  const raw = choice.message.tool_calls;
  if (raw !== undefined && raw !== null && !Array.isArray(raw)) {
    throw malformedToolCall(provider, 'tool_calls is not a list');
  }
  const toolCalls: ModelToolCall[] = (raw ?? []).map((entry: unknown) => {
    const call = entry as {
      id?: unknown;
      type?: unknown;
      function?: { name?: unknown; arguments?: unknown };
    };
    if (
      typeof call !== 'object' ||
      call === null ||
      typeof call.function !== 'object' ||
      call.function === null
    ) {
      throw malformedToolCall(provider, 'a tool call without a function');
    }
    const name = typeof call.function.name === 'string' ? call.function.name : '';
    return {
      id: typeof call.id === 'string' ? call.id : '',
      name,
      input: parseArguments(provider, name || '(unnamed)', call.function.arguments),
    };
  });
  checkToolCalls(provider, toolCalls);
  return {
    text,
    toolCalls,
    usage: {
      inputTokens: tokenCount(body.usage?.prompt_tokens),
      outputTokens: tokenCount(body.usage?.completion_tokens),
    },
    stopReason: typeof choice.finish_reason === 'string' ? choice.finish_reason : 'unknown',
  };
}

function joinParts(parts: unknown[]): string {
  return parts
    .map((p) =>
      typeof p === 'object' && p !== null && typeof (p as { text?: unknown }).text === 'string'
        ? (p as { text: string }).text
        : '',
    )
    .join('');
}
