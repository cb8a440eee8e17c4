/**
 * The shapes the dock's messages are made of: the computer's status, profiles, audit rows,
 * jobs, logs, terminals, preview, agents, approvals and the switcher's computers. The messages
 * themselves are in protocol.ts.
 */
import { z } from 'zod';

export const terminalId = z
  .string()
  .min(1)
  .max(64)
  .describe('Generation-qualified terminal id, e.g. g1.term2.');
export const requestId = z
  .string()
  .min(1)
  .max(64)
  .optional()
  .describe('Echoed in the `reply` to this request.');

/** Lifecycle as the dock shows it; `unavailable` when the server runs no computer service. */
export const lifecycleSchema = z.enum(['none', 'booting', 'running', 'error', 'stopped', 'unavailable']);

/** The computer's status (a subset of get_computer_status). */
export const statusSchema = z.object({
  generation: z.number().int().nullable(),
  profileId: z.string().nullable(),
  profileName: z.string().nullable(),
  lifecycle: lifecycleSchema,
  bootError: z.string().nullable(),
  bootMs: z.number().nullable(),
  capabilities: z.array(z.string()),
  message: z.string().nullable().describe('What the person can do next, when there is something to say.'),
});

/** A launchable profile. */
export const profileSchema = z.object({
  id: z.string(),
  name: z.string(),
  description: z.string(),
  available: z.boolean(),
  unavailableReason: z.string().nullable(),
});

/** One audit row as the dock shows it (input redacted by the store, shortened here). */
export const auditRowSchema = z.object({
  id: z.string(),
  seq: z.number().int(),
  startedAt: z.number(),
  durationMs: z.number(),
  tool: z.string(),
  source: z.string(),
  caller: z.string(),
  via: z.enum(['direct', 'channel', 'agent', 'schedule', 'webmcp', 'app']),
  state: z
    .enum(['running', 'ended', 'interrupted'])
    .describe('A row is pushed when its call starts and again when it ends (same id).'),
  success: z.boolean(),
  errorCode: z.string().nullable(),
  errorMessage: z.string().nullable(),
  parentId: z.string().nullable(),
  jobId: z.string().nullable(),
  generation: z.number().int().nullable(),
  computer: z.string().nullable().describe('The computer that ran `generation`, when this server knows it.'),
  input: z.string().describe('Redacted input, at most 600 characters.'),
  /** What a person calls the caller (the MCP client's name), when the server knows it. */
  callerLabel: z.string().optional(),
  /** One line saying what the call does with its key arguments. */
  summary: z.string().optional(),
  /** The approval that decided this `ask` call, and who decided (null for an expiry). */
  approvalId: z.string().nullable().optional(),
  approver: z.string().nullable().optional(),
  /** The tool only reads (MCP `readOnlyHint`): the timeline offers no undo of it. */
  readOnly: z.boolean().optional(),
  /** The checkpoint of the computer taken before this approved call ran (restoring it undoes the call). */
  checkpointId: z.string().nullable().optional(),
});

/** One checkpoint of the watched computer, as its timeline shows it. */
export const checkpointSchema = z.object({
  id: z.string(),
  label: z.string().nullable(),
  /** Epoch milliseconds (the timeline orders checkpoints and audit rows by it). */
  createdAt: z.number(),
  addedBytes: z.number(),
  files: z.number().int(),
  bytes: z.number(),
  trigger: z.enum(['manual', 'approval', 'restore', 'stop', 'run_command']),
  generation: z.number().int().nullable(),
  /** The audit row of the call it was taken just before (automatic checkpoints), or null. */
  before: z
    .object({ invocationId: z.string(), tool: z.string(), approvalId: z.string().nullable() })
    .nullable(),
});

/** The checkpoints of the computer the dock watches, newest first. */
export const checkpointsStateSchema = z.object({
  computer: z.string(),
  checkpoints: z.array(checkpointSchema),
});

/** A command job with the tail of its output. */
export const jobSchema = z.object({
  jobId: z.string(),
  generation: z.number().int(),
  command: z.string(),
  state: z.enum(['running', 'exited', 'failed', 'killed', 'timed_out', 'canceled']),
  exitCode: z.number().int().nullable(),
  signal: z.string().nullable(),
  durationMs: z.number(),
  stdoutTail: z.string(),
  stderrTail: z.string(),
  /** Bytes the job printed in total (stdout + stderr), of which the tails are the end. */
  outputBytes: z.number().int(),
  /** A service (run_command's `background`): no timeout ends it. */
  background: z.boolean().optional(),
  /** TCP ports the job's processes listen on (empty where the backend cannot tell). */
  ports: z.array(z.number().int()).optional(),
});

/** One entry of the computer's log. */
export const logEntrySchema = z.object({
  seq: z.number().int(),
  sinceBootMs: z.number(),
  level: z.enum(['info', 'warn', 'err', 'ok', 'debug']),
  event: z.string(),
  message: z.string(),
  generation: z.number().int().optional(),
  jobId: z.string().optional(),
});

/** A terminal shared with the dock. */
export const terminalInfoSchema = z.object({
  id: terminalId,
  label: z.string(),
  ready: z.boolean().describe('Attached to its PTY (not proof of a shell prompt).'),
  active: z.boolean(),
  heldBy: z
    .string()
    .nullable()
    .optional()
    .describe('The person who took control (the agent’s input is refused meanwhile).'),
});

/** What the preview pane shows. */
export const previewStateSchema = z.object({
  /** Guest path last navigated to, e.g. `/index.html?x=1`. */
  path: z.string().nullable(),
  /** Where the iframe points (a same-origin `/preview/...` path or the preview origin's URL). */
  url: z.string().nullable(),
  port: z.number().int().nullable(),
  status: z.enum(['idle', 'loading', 'ready', 'unreachable']),
  message: z.string().nullable(),
  /** Increases with every navigation request, so the same path can be reloaded. */
  navigation: z.number().int(),
  /** The job serving the page, and whether it ended since (its server is gone). */
  jobId: z.string().nullable().optional(),
  jobEnded: z.object({ jobId: z.string(), state: z.string() }).nullable().optional(),
});

/** Progress of a launch link confirmed in this server's lifetime. */
export const launchProgressSchema = z.object({
  linkId: z.string(),
  state: z.enum(['booting', 'running', 'error']),
  jobId: z.string().nullable(),
  terminalId: z.string().nullable(),
  error: z.string().nullable(),
});

/** Calls a page may have waiting at once through WebMCP. */
export const MAX_WEBMCP_CALLS_IN_FLIGHT = 8;

/** A computer tool as MCP lists it, for the page to register through WebMCP. */
export const webMcpToolSchema = z.object({
  name: z.string(),
  title: z.string().optional(),
  description: z.string(),
  inputSchema: z.record(z.string(), z.unknown()),
  annotations: z.record(z.string(), z.unknown()).optional(),
});

/** Longest `input` of an `agent.run` from the page, in characters. */
export const MAX_AGENT_INPUT_CHARS = 16_384;

const runStatus = z.enum(['running', 'succeeded', 'failed', 'limit', 'cancelled']);
const runTrigger = z.enum(['manual', 'schedule', 'catch-up', 'api']);

/** An agent definition as the dock shows it. */
export const agentSchema = z.object({
  name: z.string(),
  description: z.string(),
  provider: z.string(),
  model: z.string(),
  file: z.string(),
  tools: z
    .array(z.string())
    .nullable()
    .describe('The allow-list as written; null = built-ins plus named servers.'),
  mcpServers: z.array(z.string()),
  skills: z.array(z.string()),
  notify: z.array(z.string()),
  schedules: z.array(
    z.object({
      cron: z.string(),
      timezone: z.string().nullable(),
      next: z.number().nullable().describe('Epoch ms of the next tick, null when it never fires again.'),
    }),
  ),
  nextRun: z.number().nullable(),
  running: z.string().nullable().describe('Id of the run going now.'),
  lastRun: z
    .object({ id: z.string(), status: runStatus, startedAt: z.number(), endedAt: z.number().nullable() })
    .nullable(),
  warnings: z.array(z.string()),
});

/** An agent directory that did not load. */
export const agentLoadErrorSchema = z.object({
  agent: z.string(),
  file: z.string(),
  problems: z.array(z.string()),
});

/** One run of an agent (texts shortened for lists; full in `agent.details`). */
export const agentRunSchema = z.object({
  id: z.string(),
  agent: z.string(),
  trigger: runTrigger,
  status: runStatus,
  startedAt: z.number(),
  endedAt: z.number().nullable(),
  turns: z.number().int(),
  inputTokens: z.number().int(),
  outputTokens: z.number().int(),
  provider: z.string(),
  model: z.string(),
  input: z.string().nullable(),
  finalAnswer: z.string().nullable(),
  error: z.string().nullable(),
  errorCode: z.string().nullable(),
  deliveries: z.array(z.object({ channel: z.string(), ok: z.boolean(), error: z.string().nullable() })),
  /** The approval the run waits for (it shows `waiting for approval`). */
  waitingApproval: z.string().nullable().optional(),
});

/** The agents part of the dock: definitions, load errors and recent runs (newest first). */
export const agentsStateSchema = z.object({
  agents: z.array(agentSchema),
  loadErrors: z.array(agentLoadErrorSchema),
  runs: z.array(agentRunSchema),
});

/** A tool call of a run; `depth` 1 = made by the agent, 2 = by a job it started, … */
export const agentCallSchema = auditRowSchema.extend({ depth: z.number().int() });

/** Largest arguments text sent to the page for one approval; longer ones say so (never silently cut). */
export const MAX_APPROVAL_ARGUMENTS_CHARS = 256 * 1024;

/** One call that waits for a person's approval. */
export const approvalSchema = z.object({
  id: z.string(),
  tool: z.string(),
  /** Where the question comes from: a tool's source, or `egress` (a computer's connection). */
  source: z.string(),
  description: z.string().nullable(),
  /** Canonical JSON of the exact arguments (whole unless `argumentsTruncated`). */
  arguments: z.string(),
  argumentsChars: z.number().int(),
  argumentsTruncated: z.boolean(),
  argumentsSha256: z.string(),
  caller: z.string(),
  agent: z.string().nullable(),
  runId: z.string().nullable(),
  requestedAt: z.number(),
  expiresAt: z.number(),
  /** What the call will do, in one line a person reads. */
  summary: z.string().optional(),
  /** Who asks, as a person reads it (the client's name). */
  callerLabel: z.string().optional(),
  /** What the policy says of the call (null: the tool declares nothing the policy checks first). */
  verdict: z.object({ allow: z.boolean(), rule: z.string(), reason: z.string() }).nullable().optional(),
});

/** An "always allow this tool for this agent" rule. */
export const approvalRuleSchema = z.object({
  id: z.string(),
  agent: z.string(),
  tool: z.string(),
  createdAt: z.number(),
  createdBy: z.string(),
  approvalId: z.string().nullable(),
});

/** The approvals panel: what waits (oldest first) and the standing rules. */
export const approvalsStateSchema = z.object({
  pending: z.array(approvalSchema),
  rules: z.array(approvalRuleSchema),
});

/** One computer of the server, for the dock's switcher. */
export const computerSummarySchema = z.object({
  name: z.string().describe('`named:<name>` or `private:<owner>`.'),
  /** What a person calls it: whose it is (the client's name), or its own name. */
  label: z.string().optional(),
  profileId: z.string().nullable(),
  lifecycle: z.string(),
  generation: z.number().int().nullable(),
  /** MCP sessions acting on it now. */
  sessions: z.number().int(),
  idleMs: z.number(),
  workspace: z.enum(['keep', 'fresh']),
});

/** What parts of the dock this server can drive. */
export const featuresSchema = z.object({
  computer: z.boolean(),
  terminals: z.boolean(),
  preview: z.boolean(),
});
