import type { PolicyAction, Sandbox } from '../policy/types.js';
import type { Logger } from '../shared/logger.js';
import type { Principal } from '../shared/principal.js';
import type { Via } from '../shared/via.js';
import type { Span } from '../telemetry/types.js';
import type { CallerApprovals } from './caller-approvals.js';
import type { JsonSchema, Schema } from './schema.js';

export type { Via };

/** Permission of a tool for a caller. */
export type Permission = 'auto' | 'ask' | 'deny';

/** Where a tool comes from. */
export type ToolSource = 'builtin' | 'computer' | `mcp:${string}` | `plugin:${string}`;

export type { JsonSchema };

/** MCP tool annotations. */
export interface ToolAnnotations {
  title?: string;
  readOnlyHint?: boolean;
  destructiveHint?: boolean;
  idempotentHint?: boolean;
  openWorldHint?: boolean;
}

/** Progress reported by a long operation (forwarded as MCP progress notifications). */
export interface Progress {
  progress: number;
  total?: number;
  message?: string;
}

/**
 * Who is calling and under which bounds. Built by the entry point (MCP session, dock,
 * agent runner, tool channel, CLI) and carried through the pipeline unchanged.
 */
/** Which computer a caller acts on: a named one that sessions share, or a private one of its owner. */
export type ComputerRef = { kind: 'named'; name: string } | { kind: 'private'; owner: string };

export interface CallerContext {
  /** `mcp:<session>`, `dock:<user>`, `agent:<run>`, `channel:<job>`, `cli`. */
  caller: string;
  /**
   * On whose behalf the call is made (the owner, an OAuth client, an agent); a tool-channel
   * call carries the principal of the call that started its job. Computers, memories, quotas
   * and approvals are decided on it.
   */
  principal: Principal;
  /** For calls made on someone's behalf (the tool channel): the caller that started it all. */
  onBehalfOf?: string;
  via: Via;
  /** Invocation id of the parent call (a channel call's `run_command`, an agent run). */
  parentId?: string;
  /** Absolute deadline, epoch milliseconds. */
  deadline?: number;
  /** Cancellation from the caller (client disconnect, MCP cancel, job end). */
  signal?: AbortSignal;
  /** A person can approve `ask` tools for this caller (MCP client, dock, CLI). */
  attended: boolean;
  /** Restricts which tools this caller sees and may call (agent allow-lists, tool sets). */
  allowTool?: (name: string, tool: Tool) => boolean;
  /** Agent run this call belongs to, if any. */
  runId?: string;
  /** Job id for calls made through the tool channel. */
  jobId?: string;
  /** The policy for this caller (an agent's narrowed one); the server's policy when absent. */
  policy?: Sandbox;
  /** Receives progress of long operations. */
  onProgress?: (progress: Progress) => void;
  /** The computer this call acts on; absent: the caller's own private computer. */
  computer?: ComputerRef;
  /** How a person can approve this caller's `ask` calls (elicitation, an unattended wait). */
  approvals?: CallerApprovals;
  /**
   * The caller is an MCP client that declared MCP Apps: the tools only an app view calls
   * ({@link Tool.appOnly}) are listed to it and callable by it; no other caller sees them.
   */
  apps?: boolean;
}

/** What a tool receives besides its input. */
export interface ToolContext {
  invocationId: string;
  caller: CallerContext;
  /** Aborts at the deadline or when the caller cancels. */
  signal: AbortSignal;
  /** Absolute deadline, epoch milliseconds. */
  deadline: number;
  policy: Sandbox;
  logger: Logger;
  /** Records the policy rule that allowed an action (stored in the audit row). */
  notePolicyRule(rule: string): void;
  /** Records computer lineage (stored in the audit row). */
  noteComputer(info: { generation?: number; jobId?: string }): void;
  progress(progress: Progress): void;
  /** The call's span: a tool that calls onward (an upstream server) records its part as a child. */
  span?: Span;
}

/** An MCP content block (text, image, resource…), passed through as is. */
export type ContentBlock = { type: string } & Record<string, unknown>;

/**
 * The result of a tool. `structured` becomes MCP `structuredContent` and is rendered as
 * text when `content` is absent. Tools signal failure by throwing a PaddockError;
 * `isError` is only for upstream results that arrive already failed.
 */
export interface ToolResult {
  structured?: Record<string, unknown>;
  content?: ContentBlock[];
  isError?: boolean;
}

/** What a client sees of a tool (one entry of MCP `tools/list`). */
export interface ToolDescriptor {
  name: string;
  title?: string;
  description: string;
  inputSchema: JsonSchema;
  outputSchema?: JsonSchema;
  annotations: ToolAnnotations;
}

/**
 * One tool, whatever its source, as the registry holds it. Declare tools with
 * {@link ToolDefinition} and `declareTool` (src/tools/define.ts); the gateway validates an input
 * against `inputSchema` before `execute` sees it.
 */
export interface Tool extends ToolDescriptor {
  source: ToolSource;
  /** Tool sets this tool belongs to (`computer`, `builtin`, `integrations`, a server name). */
  toolsets: string[];
  execute(input: Record<string, unknown>, ctx: ToolContext): Promise<ToolResult>;
  /**
   * Only an MCP App view calls this tool (MCP Apps visibility `["app"]`): it is listed to and
   * callable by callers with `apps` only — never a model's plain client, the tool channel, an
   * agent or a dock page.
   */
  appOnly?: boolean;
  /**
   * The policy actions a call will ask about, read from its (validated) input without I/O: the
   * gateway checks them lexically before a person is asked to approve, so a call the policy
   * refuses is refused at once. `execute` still enforces in full.
   */
  policyActions?(input: Record<string, unknown>): PolicyAction[];
}

/**
 * A tool as it is declared: the protocol fields, its input schema (built with `s`, whose type
 * `I` it carries) and an `execute` that receives the input typed and already validated.
 */
export interface ToolDefinition<I> extends Omit<ToolDescriptor, 'inputSchema'> {
  /** The input schema; listed as `inputSchema` exactly as written. */
  input: Schema<I>;
  source: ToolSource;
  toolsets: string[];
  execute(input: I, ctx: ToolContext): Promise<ToolResult>;
  /** See {@link Tool.appOnly}. */
  appOnly?: boolean;
  /** See {@link Tool.policyActions}. */
  policyActions?(input: I): PolicyAction[];
}
