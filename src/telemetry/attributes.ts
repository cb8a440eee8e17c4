/**
 * Span names and attributes after the OpenTelemetry semantic conventions for GenAI and MCP
 * (Development status): `execute_tool {tool}` for a call through the gateway, `tools/call
 * {tool}` for the call to an upstream MCP server, `invoke_agent {agent}` for an agent run.
 * Inputs are never attributes unless the operator turned them on (then redacted and cut).
 */
import { MAX_INPUT_BYTES, redactedJson } from '../shared/redact.js';
import { truncateUtf8 } from '../shared/text.js';
import type { Attributes, Span, Tracer } from './types.js';

/** The caller of a call as spans record it. */
export interface CallerFacts {
  caller: string;
  via: string;
  parentId?: string | null | undefined;
  jobId?: string | null | undefined;
  runId?: string | null | undefined;
}

/**
 * The span of one gateway call, registered under its invocation id: a channel call's parent is
 * its job's span, else its parent invocation's (or agent run's).
 */
export function startCallSpan(
  tracer: Tracer,
  tool: string,
  invocationId: string,
  caller: CallerFacts,
  input: unknown,
): Span {
  return tracer.start(`execute_tool ${tool}`, {
    key: invocationId,
    parentKey: [caller.jobId && caller.via === 'channel' ? `job:${caller.jobId}` : null, caller.parentId],
    ...(tracer.enabled
      ? { attributes: toolCallAttributes(tool, invocationId, caller, input, tracer.includeInputs) }
      : {}),
  });
}

/** Ends the span of an approval wait with its outcome (refused or expired: an error). */
export function endApprovalSpan(
  span: Span,
  admission: { run: boolean; approvalId?: string | undefined; error?: { code: string } },
): void {
  span.setAttributes({ 'paddock.approval.id': admission.approvalId, 'paddock.approval.run': admission.run });
  span.end({ errorType: admission.run ? null : (admission.error?.code ?? 'refused') });
}

/** Attributes of a gateway call's span. */
export function toolCallAttributes(
  tool: string,
  invocationId: string,
  caller: CallerFacts,
  input: unknown,
  includeInputs: boolean,
): Attributes {
  return {
    'gen_ai.operation.name': 'execute_tool',
    'gen_ai.tool.name': tool,
    'gen_ai.tool.call.id': invocationId,
    'paddock.caller': caller.caller,
    'paddock.via': caller.via,
    'paddock.parent_id': caller.parentId ?? undefined,
    'paddock.job.id': caller.jobId ?? undefined,
    'gen_ai.agent.id': caller.runId ?? undefined,
    'gen_ai.tool.call.arguments': includeInputs ? inputText(input) : undefined,
  };
}

/** Attributes of the span of a call to an upstream MCP server. */
export function upstreamCallAttributes(
  server: string,
  tool: string,
  transport: string,
  input: unknown,
  includeInputs: boolean,
): Attributes {
  return {
    'mcp.method.name': 'tools/call',
    'gen_ai.operation.name': 'execute_tool',
    'gen_ai.tool.name': tool,
    'paddock.mcp.server': server,
    'network.transport': transport === 'stdio' ? 'pipe' : 'tcp',
    'gen_ai.tool.call.arguments': includeInputs ? inputText(input) : undefined,
  };
}

/** The input as a span may carry it: redacted JSON, cut to 4 KiB. */
function inputText(input: unknown): string {
  try {
    return truncateUtf8(redactedJson(input ?? {}), MAX_INPUT_BYTES);
  } catch {
    return '[unserializable input]';
  }
}
