import {
  CLIENT_CAPABILITIES_META_KEY,
  ProtocolError,
  ProtocolErrorCode,
  Server,
  type ServerContext,
} from '@modelcontextprotocol/server';
import { computerNameProblem } from '../shared/computer-name.js';
import type { Disposable } from '../shared/disposable.js';
import type { PaddockError } from '../shared/errors.js';
import { principalKey } from '../shared/principal.js';
import { describeTool } from '../tools/describe.js';
import type { CallOutcome, Gateway } from '../tools/gateway.js';
import type { ToolRegistry } from '../tools/registry.js';
import type { CallerContext, Tool, ToolResult } from '../tools/tool.js';
import { APPS_EXTENSION, appToolMeta, declaresApps, TOOLS_WITH_VIEW } from './app/extension.js';
import { type AppViewSource, installViewResource } from './app/resource.js';
import { canElicitForm, elicitApproval } from './elicitation.js';
import { installTaskMethods, type ModernServing, modernToolCall, TASKS_EXTENSION } from './modern-call.js';

/** The protocol era an instance serves: 2025-11-25 and before (`legacy`), or 2026-07-28 (`modern`). */
export type Era = 'legacy' | 'modern';

/** The `_meta` key by which a 2026-era request names the computer it acts on. */
export const COMPUTER_META_KEY = 'paddock/computer';

export const SERVER_NAME = 'paddock';

/** What an MCP session needs from the rest of Paddock. */
export interface McpServerDeps {
  gateway: Gateway;
  registry: ToolRegistry;
  version: string;
  /** Tool sets this endpoint exposes; empty or undefined = all. */
  toolsets?: readonly string[];
  instructions?: string;
  /** What 2026-era requests share across requests (their background calls and tasks). */
  modern?: ModernServing;
  /**
   * The computer view (MCP Apps): served to clients that declare the extension; without it the
   * server offers no view and every client sees the tools as a plain client does.
   */
  appView?: AppViewSource;
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
 * Builds one MCP server instance: one per 2025-era session, or one per 2026-era request (or
 * stdio connection). It only translates: every call goes through the gateway with the caller
 * context `caller` gives for the request.
 */
export function createMcpServer(
  deps: McpServerDeps,
  caller: () => CallerContext,
  era: Era = 'legacy',
  /** Send `list_changed` when the registry changes (off for an instance that serves one request). */
  listChanged = true,
): { server: Server; dispose(): void } {
  const modern = era === 'modern' ? deps.modern : undefined;
  if (era === 'modern' && !modern) throw new Error('The 2026 era needs ModernServing in McpServerDeps.');
  const server = new Server(
    { name: SERVER_NAME, version: deps.version },
    {
      capabilities: {
        tools: { listChanged: true },
        logging: {},
        ...(deps.appView ? { resources: {} } : {}),
        ...(modern || deps.appView
          ? {
              extensions: {
                ...(modern ? { [TASKS_EXTENSION]: {} } : {}),
                ...(deps.appView ? { [APPS_EXTENSION]: {} } : {}),
              },
            }
          : {}),
      },
      ...(deps.instructions ? { instructions: deps.instructions } : {}),
      ...(modern ? { requestState: { verify: modern.state.verify } } : {}),
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
  const render = (outcome: CallOutcome, name: string): Record<string, unknown> => {
    if (outcome.ok) return toCallToolResult(outcome.result, deps.registry.get(name), outcome.structuredJson);
    if (outcome.protocol)
      throw new ProtocolError(ProtocolErrorCode.InvalidParams, outcome.error.message, outcome.error.toJSON());
    return toErrorResult(outcome.error);
  };

  /** The client's capabilities: the request's envelope (2026 era) or the session's handshake. */
  const capabilitiesOf = (ctx: ServerContext): Record<string, unknown> | undefined =>
    modern
      ? (ctx.mcpReq.envelope?.[CLIENT_CAPABILITIES_META_KEY as never] as Record<string, unknown> | undefined)
      : (server.getClientCapabilities() as Record<string, unknown> | undefined);
  /** Whether this request's client shows the computer view (MCP Apps with its HTML profile). */
  const appsOf = (ctx: ServerContext): boolean =>
    deps.appView !== undefined && declaresApps(capabilitiesOf(ctx));
  /**
   * The caller of one call: a client with MCP Apps reaches the view's tools, whose calls are
   * audited `via: app`; a call whose result the view shows waits for a decision made there.
   */
  const forCall = (base: CallerContext, name: string, apps: boolean): CallerContext => {
    if (!apps) return base;
    const appOnly = deps.registry.get(name)?.appOnly === true;
    return {
      ...base,
      apps: true,
      ...(appOnly ? { via: 'app' as const } : {}),
      ...(TOOLS_WITH_VIEW.has(name) ? { approvals: { ...base.approvals, inView: true } } : {}),
    };
  };

  server.setRequestHandler('tools/list', async (_request, ctx) => {
    await deps.gateway.ready();
    const apps = appsOf(ctx);
    if (!apps) return { tools: deps.gateway.listTools(scoped()).map(describeTool) } as never;
    const tools = deps.gateway.listTools({ ...scoped(), apps }).map((tool) => {
      const meta = appToolMeta(tool);
      return meta ? { ...describeTool(tool), _meta: meta } : describeTool(tool);
    });
    return { tools } as never;
  });
  if (deps.appView) installViewResource(server, deps.appView, appsOf);

  if (modern) {
    const principal = principalKey(caller().principal);
    installTaskMethods(server, modern, principal, render);
    server.setRequestHandler('tools/call', async (request, ctx) => {
      const params = request.params;
      const capabilities = capabilitiesOf(ctx);
      const base = forCall(
        withMetaComputer(scoped(), params._meta?.[COMPUTER_META_KEY]),
        params.name,
        appsOf(ctx),
      );
      const elicits = canElicitForm(capabilities);
      const extensions = capabilities?.extensions as Record<string, unknown> | undefined;
      return (await modernToolCall(
        modern,
        {
          name: params.name,
          args: params.arguments ?? {},
          caller: elicits ? { ...base, approvals: { ...base.approvals, elicit: deferred } } : base,
          principal,
          tasks: extensions?.[TASKS_EXTENSION] !== undefined,
        },
        ctx,
        render,
      )) as never;
    });
  } else {
    server.setRequestHandler('tools/call', async (request, ctx) => legacyCall(request.params, ctx) as never);
  }
  const sub: Disposable | undefined = listChanged
    ? deps.registry.onChange(() => {
        void server.sendToolListChanged().catch(() => {});
      })
    : undefined;
  return { server, dispose: () => sub?.dispose() };

  /** A 2025-era call: approvals are asked by elicitation pushed on the session. */
  async function legacyCall(params: CallToolParams, ctx: ServerContext): Promise<Record<string, unknown>> {
    const progressToken = params._meta?.progressToken as string | number | undefined;
    const base = forCall(scoped(), params.name, appsOf(ctx));
    const elicits = canElicitForm(capabilitiesOf(ctx));
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
    return render(outcome, params.name);
  }
}

type CallToolParams = { name: string; arguments?: Record<string, unknown>; _meta?: Record<string, unknown> };

/**
 * A placeholder `elicit` that marks the caller as one whose person can be asked; the
 * background call replaces it with the one that keeps the question for the client.
 */
const deferred = (): Promise<never> => Promise.reject(new Error('answered through input_required'));

/**
 * The caller with the computer a request names in its `_meta` (2026 era); a name that
 * disagrees with the one its header or connection chose is refused.
 */
function withMetaComputer(base: CallerContext, named: unknown): CallerContext {
  if (named === undefined) return base;
  const problem =
    typeof named === 'string' ? computerNameProblem(named) : 'The computer name must be a string.';
  if (problem)
    throw new ProtocolError(ProtocolErrorCode.InvalidParams, `${problem} (_meta "${COMPUTER_META_KEY}")`);
  if (base.computer?.kind === 'named' && base.computer.name !== named)
    throw new ProtocolError(
      ProtocolErrorCode.InvalidParams,
      `The request names computer "${named}" in _meta but "${base.computer.name}" in its Paddock-Computer header (or its connection); name one.`,
    );
  return { ...base, computer: { kind: 'named', name: named as string } };
}
