import { ProtocolError, ProtocolErrorCode, Server } from '@modelcontextprotocol/server';
import type { Disposable } from '../shared/disposable.js';
import type { PaddockError } from '../shared/errors.js';
import { describeTool } from '../tools/describe.js';
import type { Gateway } from '../tools/gateway.js';
import type { ToolRegistry } from '../tools/registry.js';
import type { CallerContext, Tool, ToolResult } from '../tools/tool.js';
import { canElicitForm, elicitApproval } from './elicitation.js';

export const SERVER_NAME = 'paddock';

/** What an MCP session needs from the rest of Paddock. */
export interface McpServerDeps {
  gateway: Gateway;
  registry: ToolRegistry;
  version: string;
  /** Tool sets this endpoint exposes; empty or undefined = all. */
  toolsets?: readonly string[];
  instructions?: string;
}

/** Whether a tool belongs to one of the selected tool sets (all when none are selected). */
export function inToolsets(tool: Tool, toolsets: readonly string[] | undefined): boolean {
  if (!toolsets || toolsets.length === 0) return true;
  return tool.toolsets.some((t) => toolsets.includes(t));
}

/**
 * Above this size a structured result travels once, as its JSON text, instead of twice
 * (structuredContent plus the same JSON as text): large reads stay as fast as a text-only
 * server. Tools that declare an outputSchema always send structuredContent.
 */
export const STRUCTURED_INLINE_MAX_BYTES = 16 * 1024;

/**
 * Renders a gateway result as an MCP CallToolResult (structured content plus a text rendering);
 * `structuredJson`, the JSON of `result.structured` when already made, is used as that text.
 */
export function toCallToolResult(
  result: ToolResult,
  tool?: Pick<Tool, 'outputSchema'>,
  structuredJson?: string,
): Record<string, unknown> {
  if (result.content) {
    return {
      content: result.content,
      ...(result.structured ? { structuredContent: result.structured } : {}),
      ...(result.isError ? { isError: true } : {}),
    };
  }
  const text = result.structured ? (structuredJson ?? JSON.stringify(result.structured)) : undefined;
  const withStructured =
    result.structured !== undefined &&
    (tool?.outputSchema !== undefined || (text?.length ?? 0) <= STRUCTURED_INLINE_MAX_BYTES);
  return {
    content: text === undefined ? [] : [{ type: 'text', text }],
    ...(withStructured ? { structuredContent: result.structured } : {}),
    ...(result.isError ? { isError: true } : {}),
  };
}

/** Renders a tool error: `isError: true` with the JSON body `{ code, message, ...details }`. */
export function toErrorResult(error: PaddockError): Record<string, unknown> {
  return { isError: true, content: [{ type: 'text', text: JSON.stringify(error.toJSON()) }] };
}

/**
 * Builds one MCP server instance (one per session). It only translates: every call goes
 * through the gateway with the session's caller context.
 */
export function createMcpServer(
  deps: McpServerDeps,
  caller: () => CallerContext,
): { server: Server; dispose(): void } {
  const server = new Server(
    { name: SERVER_NAME, version: deps.version },
    {
      capabilities: { tools: { listChanged: true }, logging: {} },
      ...(deps.instructions ? { instructions: deps.instructions } : {}),
    },
  );
  const scoped = (): CallerContext => {
    const base = caller();
    const outer = base.allowTool;
    return {
      ...base,
      allowTool: (name, tool) => inToolsets(tool, deps.toolsets) && (outer ? outer(name, tool) : true),
    };
  };

  server.setRequestHandler('tools/list', async () => {
    await deps.gateway.ready();
    return { tools: deps.gateway.listTools(scoped()).map(describeTool) } as never;
  });

  server.setRequestHandler('tools/call', async (request, ctx) => {
    const params = request.params;
    const progressToken = params._meta?.progressToken;
    const base = scoped();
    const elicits = canElicitForm(server.getClientCapabilities() as Record<string, unknown> | undefined);
    const outcome = await deps.gateway.call(params.name, params.arguments ?? {}, {
      ...base,
      ...(elicits
        ? {
            approvals: { ...base.approvals, elicit: (prompt, signal) => elicitApproval(ctx, prompt, signal) },
          }
        : {}),
      signal: ctx.mcpReq.signal,
      onProgress:
        progressToken === undefined
          ? undefined
          : (p) => {
              void ctx.mcpReq
                .notify({ method: 'notifications/progress', params: { progressToken, ...p } })
                .catch(() => {});
            },
    });
    if (outcome.ok) {
      return toCallToolResult(
        outcome.result,
        deps.registry.get(params.name),
        outcome.structuredJson,
      ) as never;
    }
    if (outcome.protocol) {
      throw new ProtocolError(ProtocolErrorCode.InvalidParams, outcome.error.message, outcome.error.toJSON());
    }
    return toErrorResult(outcome.error) as never;
  });

  const sub: Disposable = deps.registry.onChange(() => {
    void server.sendToolListChanged().catch(() => {});
  });
  return { server, dispose: () => sub.dispose() };
}
