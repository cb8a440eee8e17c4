import { ProtocolError, SdkError, SdkErrorCode } from '@modelcontextprotocol/client';
import { PaddockError } from '../shared/errors.js';
import type { ContentBlock, ToolResult } from '../tools/tool.js';
import type { McpServerConfig } from './load-config.js';
import { clip } from './upstream-text.js';

function malformed(server: string, tool: string, what: string): PaddockError {
  return new PaddockError(
    'UPSTREAM_ERROR',
    `MCP server "${server}" returned a malformed result for tool "${tool}" (${what}). ` +
      `The server is at fault; check its version and logs (\`paddock servers logs ${server}\`).`,
    { server, tool },
  );
}

/**
 * Maps an upstream `tools/call` result to a {@link ToolResult}: `structuredContent` →
 * `structured`, `content` → `content`, `isError: true` passes through. A result that is
 * not an object, whose `content` is not a list of typed blocks, or whose
 * `structuredContent` is not a JSON object (then its JSON text is kept as content when
 * there is none) is UPSTREAM_ERROR or degraded as described.
 */
export function toToolResult(server: string, tool: string, raw: unknown): ToolResult {
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw))
    throw malformed(server, tool, 'not an object');
  const r = raw as Record<string, unknown>;
  const out: ToolResult = {};
  if (r.content !== undefined) {
    if (!Array.isArray(r.content)) throw malformed(server, tool, '`content` is not a list');
    for (const block of r.content) {
      if (
        block === null ||
        typeof block !== 'object' ||
        typeof (block as { type?: unknown }).type !== 'string'
      ) {
        throw malformed(server, tool, 'a content block has no `type`');
      }
    }
    out.content = r.content as ContentBlock[];
  }
  const sc = r.structuredContent;
  if (sc !== undefined && sc !== null) {
    if (typeof sc === 'object' && !Array.isArray(sc)) out.structured = sc as Record<string, unknown>;
    else if (!out.content || out.content.length === 0)
      out.content = [{ type: 'text', text: JSON.stringify(sc) }];
  }
  if (!out.content && !out.structured) out.content = [];
  if (r.isError === true) out.isError = true;
  return out;
}

/** Why a connection went away, when Paddock knows better than "connection closed". */
export interface CallFailureContext {
  server: string;
  tool: string;
  /** The reason recorded when Paddock itself dropped the connection (e.g. a result over the cap). */
  closeReason?: string;
  /** The call's deadline passed (as opposed to a cancellation by the caller). */
  deadlineReached: boolean;
  cancelledByCaller: boolean;
  timeoutMs: number;
}

/** Turns whatever a call to the SDK threw into the PaddockError the caller sees. */
export function callError(e: unknown, c: CallFailureContext): PaddockError {
  const { server, tool } = c;
  const details = { server, tool };
  if (e instanceof PaddockError) return e;
  if (c.closeReason) {
    return new PaddockError(
      'UPSTREAM_ERROR',
      `MCP server "${server}" failed during tool "${tool}": ${c.closeReason}.`,
      details,
    );
  }
  if (c.cancelledByCaller && !c.deadlineReached) {
    return new PaddockError(
      'TIMEOUT',
      `The call to "${tool}" on MCP server "${server}" was cancelled by the caller; the server was told to stop.`,
      details,
    );
  }
  if (e instanceof SdkError) {
    switch (e.code) {
      case SdkErrorCode.RequestTimeout:
        return new PaddockError(
          'UPSTREAM_ERROR',
          `MCP server "${server}" did not answer tool "${tool}" within ${c.timeoutMs} ms (the caller's deadline); ` +
            'it was sent a cancellation. Retry with a longer deadline, or check the server with `paddock servers logs ' +
            `${server}\`.`,
          details,
        );
      case SdkErrorCode.ConnectionClosed:
      case SdkErrorCode.NotConnected:
        return new PaddockError(
          'UPSTREAM_ERROR',
          `The connection to MCP server "${server}" closed during tool "${tool}" (the server exited or dropped it); ` +
            `Paddock restarts it — retry the call, and see \`paddock servers logs ${server}\` if it keeps failing.`,
          details,
        );
      case SdkErrorCode.InvalidResult:
        return malformed(server, tool, describeInvalid(e.message));
      default:
        return new PaddockError(
          'UPSTREAM_ERROR',
          `MCP server "${server}" failed tool "${tool}": ${clip(e.message)}.`,
          details,
        );
    }
  }
  if (e instanceof ProtocolError) {
    return new PaddockError(
      'UPSTREAM_ERROR',
      `MCP server "${server}" rejected tool "${tool}" (error ${e.code}): ${clip(e.message)}. Check the arguments against the tool's schema.`,
      { ...details, upstreamCode: e.code },
    );
  }
  const message = e instanceof Error ? e.message : String(e);
  if (e instanceof Error && (e.name === 'ZodError' || e.name === '$ZodError'))
    return malformed(server, tool, clip(message, 200));
  return new PaddockError(
    'UPSTREAM_ERROR',
    `Could not reach MCP server "${server}" for tool "${tool}": ${clip(message)}. Check that it is running and reachable.`,
    details,
  );
}

/** Turns the SDK's "Invalid result for tools/call: [zod issues as JSON]" into `path: message` text. */
function describeInvalid(message: string): string {
  const start = message.indexOf('[');
  if (start !== -1) {
    try {
      const issues = JSON.parse(message.slice(start)) as { path?: unknown[]; message?: string }[];
      if (Array.isArray(issues) && issues.length > 0) {
        return clip(
          issues
            .map((i) => `${i.path?.length ? i.path.join('.') : '(result)'}: ${i.message ?? 'invalid'}`)
            .join('; '),
          200,
        );
      }
    } catch {
      // not the JSON form: fall through
    }
  }
  return clip(message, 200);
}

/** Why a server could not be started, for `lastError` and the caller's message. */
export function startFailureReason(
  e: unknown,
  phase: string,
  config: McpServerConfig,
  lastStderr: string | undefined,
): string {
  const tail = lastStderr ? ` (last stderr line: "${clip(lastStderr, 200)}")` : '';
  if (e instanceof SdkError && e.code === SdkErrorCode.RequestTimeout) {
    return `it did not answer ${phase} within ${config.timeoutMs} ms (timeoutMs)${tail}`;
  }
  if (e instanceof SdkError && e.code === SdkErrorCode.ConnectionClosed) {
    return config.transport === 'stdio'
      ? `the process exited during ${phase}${tail}`
      : `the server closed the connection during ${phase}`;
  }
  const err = e as NodeJS.ErrnoException & { cause?: { message?: string } };
  if (err?.code === 'ENOENT' && config.transport === 'stdio') {
    return `command "${config.command}" was not found (is it installed and on PATH?)`;
  }
  const cause = err?.cause?.message ? `: ${err.cause.message}` : '';
  return `${clip(err?.message ?? String(e), 300)}${cause}${tail}`;
}

/** A transport-level failure (not a tool error, not a timeout, not a bad result). */
export function isConnectionFailure(e: unknown): boolean {
  if (e instanceof SdkError) {
    return ![SdkErrorCode.RequestTimeout, SdkErrorCode.InvalidResult].includes(e.code as SdkErrorCode);
  }
  return e instanceof TypeError || (e instanceof Error && e.name !== 'ProtocolError');
}
