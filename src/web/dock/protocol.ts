/**
 * The dock's websocket protocol: JSON messages with a `type`, one zod contract for both
 * directions. The server validates every message from the page; the page imports the types
 * only (`z.infer`), so the browser bundle carries no zod.
 */
import { z } from 'zod';
import { trustClientMessages, trustServerMessages } from './protocol-trust.js';
import {
  agentCallSchema,
  type agentLoadErrorSchema,
  agentRunSchema,
  type agentSchema,
  agentsStateSchema,
  type approvalRuleSchema,
  type approvalSchema,
  approvalsStateSchema,
  auditRowSchema,
  type checkpointSchema,
  checkpointsStateSchema,
  computerSummarySchema,
  featuresSchema,
  jobSchema,
  launchProgressSchema,
  logEntrySchema,
  MAX_AGENT_INPUT_CHARS,
  previewStateSchema,
  profileSchema,
  requestId,
  statusSchema,
  terminalId,
  terminalInfoSchema,
  webMcpToolSchema,
} from './protocol-views.js';

export * from './protocol-trust.js';
export * from './protocol-views.js';

/** Largest message the page may send (a terminal paste of 64 KiB plus framing). */
export const MAX_CLIENT_MESSAGE_BYTES = 160 * 1024;
/** Largest text of one `terminal.input` (the same bound as send_terminal_input). */
export const MAX_TERMINAL_INPUT_CHARS = 65_536;

/** Everything a page needs to render from scratch (first message; again after a resync). */
export const snapshotSchema = z.object({
  type: z.literal('snapshot'),
  /** True when the server dropped messages for this socket; the page re-attaches its terminals. */
  resync: z.boolean(),
  version: z.string(),
  caller: z.string(),
  features: featuresSchema,
  status: statusSchema,
  profiles: z.array(profileSchema),
  audit: z.array(auditRowSchema),
  jobs: z.array(jobSchema),
  logs: z.array(logEntrySchema),
  terminals: z.array(terminalInfoSchema),
  preview: previewStateSchema.nullable(),
  launch: launchProgressSchema.nullable(),
  /** Null when the server runs no agents service. */
  agents: agentsStateSchema.nullable(),
  /** Every computer of the server, and the one this page shows (null before any launch). */
  computers: z.array(computerSummarySchema),
  watching: z.string().nullable(),
  /** Null when the server keeps no approvals. */
  approvals: approvalsStateSchema.nullable(),
  /** The watched computer's checkpoints (null until known, or without a computer). */
  checkpoints: checkpointsStateSchema.nullable(),
});

/** A browser computer hosted by one page (an id the server gives; the page cannot choose it). */
const vmId = z.string().regex(/^vm-[a-f0-9]{16}$/);
/** Bytes of a guest serial port (1: the agent, 2: the terminal), base64. */
const serialData = z
  .string()
  .min(1)
  .max(96 * 1024)
  .regex(/^[A-Za-z0-9+/]*={0,2}$/);

/** Messages from the server to the page. */
export const serverMessageSchema = z.discriminatedUnion('type', [
  z.object({
    type: z.literal('vm.boot'),
    vm: vmId,
    /** The computer's generation: the page marks it as living in this tab. */
    generation: z.number().int().optional(),
    memoryMb: z.number().int().positive(),
    cmdline: z.string(),
    /** The emulator's devices (v86 options of scripts/browser-image/machine.json). */
    emulator: z.record(z.string(), z.union([z.number(), z.boolean()])),
    /** URLs of the emulator's wasm and of the image's files, on this server. */
    wasm: z.string(),
    files: z.object({ bios: z.string(), vgaBios: z.string(), bzimage: z.string(), initrd: z.string() }),
    /** The snapshot of the booted machine to restore instead of booting, when the image has one. */
    state: z.string().optional(),
  }),
  z.object({
    type: z.literal('vm.serial'),
    vm: vmId,
    port: z.union([z.literal(1), z.literal(2)]),
    data: serialData,
  }),
  z.object({ type: z.literal('vm.stop'), vm: vmId }),
  snapshotSchema,
  z.object({ type: z.literal('status'), status: statusSchema }),
  z.object({ type: z.literal('profiles'), profiles: z.array(profileSchema) }),
  z.object({ type: z.literal('audit'), row: auditRowSchema }),
  z.object({ type: z.literal('job'), job: jobSchema }),
  z.object({ type: z.literal('checkpoints'), checkpoints: checkpointsStateSchema }),
  z.object({ type: z.literal('log'), entry: logEntrySchema }),
  z.object({ type: z.literal('terminal.list'), terminals: z.array(terminalInfoSchema) }),
  z.object({
    type: z.literal('terminal.output'),
    terminalId,
    data: z.string(),
    cursor: z.string().describe('Where this chunk ends; pass it to terminal.attach to resume.'),
    /** Output between the page's cursor and this chunk was dropped by retention. */
    gap: z.boolean(),
  }),
  z.object({ type: z.literal('terminal.attached'), terminalId, fromCursor: z.string().nullable() }),
  z.object({ type: z.literal('preview.state'), preview: previewStateSchema }),
  z.object({
    type: z.literal('preview.ports'),
    ports: z.array(z.number().int()).describe('TCP ports something in the watched computer listens on.'),
  }),
  z.object({ type: z.literal('launch.progress'), launch: launchProgressSchema }),
  z.object({ type: z.literal('agents'), agents: agentsStateSchema }),
  z.object({ type: z.literal('agent.run'), run: agentRunSchema }),
  z.object({ type: z.literal('approvals'), approvals: approvalsStateSchema }),
  z.object({
    type: z.literal('agent.details'),
    run: agentRunSchema,
    calls: z.array(agentCallSchema).describe('Oldest first; nest by parentId.'),
    /** True when the run had more calls than were sent. */
    truncated: z.boolean(),
  }),
  z.object({
    type: z.literal('agent.started'),
    agent: z.string(),
    runId: z.string(),
    requestId: z.string().nullable(),
  }),
  z.object({
    type: z.literal('computers'),
    computers: z.array(computerSummarySchema),
    watching: z.string().nullable(),
  }),
  z.object({
    type: z.literal('webmcp.tools'),
    tools: z.array(webMcpToolSchema).describe('The computer tools, exactly as tools/list gives them.'),
  }),
  z.object({
    type: z.literal('webmcp.result'),
    callId: z.string(),
    /** An MCP CallToolResult: content, structuredContent, isError (a refusal is isError with its code). */
    result: z.record(z.string(), z.unknown()),
  }),
  z.object({
    type: z.literal('reply'),
    requestId: z.string().nullable(),
    request: z.string(),
    ok: z.boolean(),
    code: z.string().nullable(),
    message: z.string(),
  }),
  ...trustServerMessages,
]);

/** Messages from the page to the server. */
export const clientMessageSchema = z.discriminatedUnion('type', [
  ...trustClientMessages,
  z
    .object({ type: z.literal('vm.host'), requestId })
    .strict()
    .describe('This page can host a browser computer (it has the emulator).'),
  z
    .object({
      type: z.literal('vm.serial'),
      vm: vmId,
      port: z.union([z.literal(1), z.literal(2)]),
      data: serialData,
      requestId,
    })
    .strict(),
  z
    .object({
      type: z.literal('launch'),
      profileId: z.string().min(1).max(64),
      keepWorkspace: z.boolean().optional().describe('Carry the replaced computer’s /workspace over.'),
      requestId,
    })
    .strict(),
  z
    .object({
      type: z.literal('terminal.input'),
      terminalId,
      data: z.string().min(1).max(MAX_TERMINAL_INPUT_CHARS),
      requestId,
    })
    .strict(),
  z
    .object({
      type: z.literal('terminal.resize'),
      terminalId,
      cols: z.number().int().min(2).max(1000),
      rows: z.number().int().min(1).max(500),
      requestId,
    })
    .strict(),
  z
    .object({
      type: z.literal('terminal.attach'),
      terminalId,
      fromCursor: z
        .string()
        .max(256)
        .optional()
        .describe('Resume after this cursor; all retained output when absent.'),
      requestId,
    })
    .strict(),
  z.object({ type: z.literal('terminal.activate'), terminalId, requestId }).strict(),
  z
    .object({
      type: z.literal('preview.navigate'),
      path: z.string().min(1).max(2048).describe('Guest path, e.g. /index.html?x=1.'),
      port: z.number().int().min(1).max(65535).optional().describe('Port to show; default the current one.'),
      requestId,
    })
    .strict(),
  z
    .object({ type: z.literal('preview.ports'), requestId })
    .strict()
    .describe('Asks for the ports the watched computer listens on (answered with preview.ports).'),
  z
    .object({ type: z.literal('job.cancel'), jobId: z.string().min(1).max(160), requestId })
    .strict()
    .describe('Cancels a job of the watched computer through cancel_job (audited as the person).'),
  z
    .object({
      type: z.literal('checkpoint.restore'),
      computer: z.string().min(1).max(200).describe('The watched computer, as the page knows it.'),
      checkpointId: z.string().min(1).max(100),
      requestId,
    })
    .strict()
    .describe(
      'Restores a checkpoint of the watched computer through restore_checkpoint (audited as the person).',
    ),
  z
    .object({
      type: z.literal('checkpoint.fork'),
      computer: z.string().min(1).max(200).describe('The watched computer, as the page knows it.'),
      checkpointId: z.string().min(1).max(100),
      name: z.string().min(1).max(63).describe('Name of the new computer.'),
      requestId,
    })
    .strict()
    .describe('Boots a new named computer from a checkpoint through fork_computer (audited as the person).'),
  z
    .object({
      type: z.literal('agent.run'),
      name: z.string().min(1).max(128).describe('The agent to run now (trigger `api`).'),
      input: z.string().max(MAX_AGENT_INPUT_CHARS).optional().describe('Input text of the run.'),
      requestId,
    })
    .strict(),
  z.object({ type: z.literal('agent.show'), runId: z.string().min(1).max(64), requestId }).strict(),
  z
    .object({
      type: z.literal('approval.decide'),
      id: z.string().min(1).max(64),
      approve: z.boolean(),
      scope: z
        .enum(['once', 'session', 'always'])
        .optional()
        .describe('once (default), the tool for the rest of the caller session, or always for this agent.'),
      reason: z.string().max(2000).optional().describe('Told to the caller when denying.'),
      requestId,
    })
    .strict(),
  z
    .object({ type: z.literal('approval.rule.remove'), ruleId: z.string().min(1).max(64), requestId })
    .strict(),
  z.object({ type: z.literal('webmcp.list'), requestId }).strict(),
  z
    .object({
      type: z.literal('computer.watch'),
      name: z.string().min(1).max(200).describe('A computer as the switcher lists it.'),
      requestId,
    })
    .strict(),
  z
    .object({
      type: z.literal('webmcp.call'),
      callId: z.string().min(1).max(64).describe('Echoed in the `webmcp.result` of this call.'),
      name: z.string().min(1).max(128),
      arguments: z.record(z.string(), z.unknown()),
      requestId,
    })
    .strict(),
]);

export type DockStatus = z.infer<typeof statusSchema>;
export type DockProfile = z.infer<typeof profileSchema>;
export type DockAuditRow = z.infer<typeof auditRowSchema>;
export type DockJob = z.infer<typeof jobSchema>;
export type DockCheckpoint = z.infer<typeof checkpointSchema>;
export type DockCheckpointsState = z.infer<typeof checkpointsStateSchema>;
export type DockLogEntry = z.infer<typeof logEntrySchema>;
export type DockTerminal = z.infer<typeof terminalInfoSchema>;
export type DockPreview = z.infer<typeof previewStateSchema>;
export type DockLaunchProgress = z.infer<typeof launchProgressSchema>;
export type DockAgent = z.infer<typeof agentSchema>;
export type DockAgentLoadError = z.infer<typeof agentLoadErrorSchema>;
export type DockAgentRun = z.infer<typeof agentRunSchema>;
export type DockAgentsState = z.infer<typeof agentsStateSchema>;
export type DockAgentCall = z.infer<typeof agentCallSchema>;
export type DockFeatures = z.infer<typeof featuresSchema>;
export type DockApproval = z.infer<typeof approvalSchema>;
export type DockApprovalRule = z.infer<typeof approvalRuleSchema>;
export type DockApprovalsState = z.infer<typeof approvalsStateSchema>;
export type DockWebMcpTool = z.infer<typeof webMcpToolSchema>;
export type DockComputerSummary = z.infer<typeof computerSummarySchema>;
export type DockSnapshot = z.infer<typeof snapshotSchema>;
export type ServerMessage = z.infer<typeof serverMessageSchema>;
export type ClientMessage = z.infer<typeof clientMessageSchema>;
