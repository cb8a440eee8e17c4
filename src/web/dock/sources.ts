/**
 * What the dock needs from the computer, as small interfaces. The computer side implements
 * them (see computer-adapter.ts for the ComputerService; terminals and preview come from the
 * guest's PTYs and preview relay). Every subscription returns a Disposable.
 */

import type { Disposable } from '../../shared/disposable.js';
import type { ComputerRef } from '../../tools/tool.js';
import type {
  DockAgent,
  DockAgentCall,
  DockAgentLoadError,
  DockAgentRun,
  DockApprovalsState,
  DockCheckpointsState,
  DockComputerSummary,
  DockJob,
  DockLogEntry,
  DockPreview,
  DockProfile,
  DockStatus,
  DockTerminal,
  DockWebMcpTool,
} from './protocol.js';
import type { DockJournalEntry } from './protocol-trust.js';

export type { Disposable };

/** A piece of terminal output; `cursor` marks where it ends. */
export interface TerminalChunk {
  /** Output text, ANSI sequences included; never ends inside a UTF-8 sequence. */
  data: string;
  cursor: string;
  /** Output between the requested cursor and this chunk was dropped by retention. */
  gap: boolean;
}

/**
 * The terminals of the current computer (PTYs in the guest). Ids are generation-qualified;
 * methods throw PaddockError (`STALE_GENERATION`, `NOT_FOUND`, `NOT_RUNNING`) with a message
 * the dock shows as is.
 */
export interface TerminalSource {
  /** Terminals of the current generation, with the active one marked. */
  list(): DockTerminal[];
  /** Writes the person's keystrokes (or a paste) to the PTY; `who` is the dock caller (journal). */
  write(terminalId: string, data: string, who?: string): Promise<void>;
  /** Follows the dock's viewport. */
  resize(terminalId: string, cols: number, rows: number): Promise<void>;
  /** Makes a terminal the active one (the person picked its tab). */
  activate(terminalId: string): Promise<void>;
  /**
   * Replays retained output after `fromCursor` (all retained output when absent; from the
   * oldest retained byte with `gap: true` when the cursor is behind retention), then
   * delivers live output in order until disposed.
   */
  subscribe(
    terminalId: string,
    fromCursor: string | undefined,
    onData: (chunk: TerminalChunk) => void,
  ): Disposable;
  /** Fires when terminals appear or go, become ready, or the active one changes. */
  onChange(listener: () => void): Disposable;
  /** The person takes control: the agent's input is refused until `release`. */
  hold?(terminalId: string, who: string): unknown;
  release?(terminalId: string, who: string): unknown;
  /** Who typed what, oldest first (of one source when given). */
  journal?(terminalId: string, source?: 'agent' | 'person' | 'script'): DockJournalEntry[];
  /** The kept session as an asciicast v2 file. */
  asciicast?(terminalId: string): string;
}

/** The preview pane's source (the guest's preview relay plus navigate_preview). */
export interface PreviewSource {
  state(): DockPreview;
  /** A navigation the person typed in the path bar (optionally to another port); same checks as navigate_preview. */
  navigate(path: string, port?: number): Promise<DockPreview>;
  /** TCP ports something inside the watched computer listens on. */
  ports(): number[];
  /** Fires on every navigation request and state change (the agent's navigate_preview included). */
  onChange(listener: (state: DockPreview) => void): Disposable;
}

/** A change in the computer the dock should show. */
export type ComputerChange =
  | { kind: 'status' }
  | { kind: 'profiles' }
  | { kind: 'job'; jobId: string }
  | { kind: 'log'; entry: DockLogEntry }
  /** A computer appeared, changed lifecycle or went: the switcher's list changed. */
  | { kind: 'computers' }
  /** The dock watches another computer: every panel starts over. */
  | { kind: 'watch' }
  /** The watched computer's checkpoints changed: pull `checkpoints()`. */
  | { kind: 'checkpoints' };

/** A launch link as the confirm page shows it. */
export interface LaunchLinkView {
  id: string;
  createdAt: number;
  profile: DockProfile;
  startupScript: string;
}

/** What booting a launch link reports once the computer is up (or failed). */
export interface LaunchLinkBoot {
  lifecycle: string;
  bootError: string | null;
  jobId: string | null;
  /** The terminal running the startup script, once scripts run in terminals. */
  terminalId?: string | null;
}

/** The computer as the dock sees it. */
export interface DockComputer {
  status(): DockStatus;
  profiles(): DockProfile[];
  /** Whether a profile's computer runs in a dock page (a `browser` profile). */
  hostedByPage?(profileId: string): boolean;
  /** Replaces the current computer with a new generation of the profile; returns once started. */
  launch(profileId: string, options?: { keepWorkspace?: boolean }): Promise<void>;
  /** Jobs of the current generation, oldest first (bounded by the implementation). */
  jobs(): DockJob[];
  /** A job of the current generation, or undefined when unknown or stale. */
  job(jobId: string): DockJob | undefined;
  /** The newest log entries, oldest first. */
  recentLogs(limit: number): DockLogEntry[];
  /** A stored launch link; throws PaddockError NOT_FOUND / INVALID_ARGUMENT / UNSUPPORTED_CAPABILITY. */
  launchLink(id: string): Promise<LaunchLinkView>;
  /** Boots a launch link; rejects at once when the launch is refused. */
  bootLaunchLink(id: string): Promise<LaunchLinkBoot>;
  /** Change notifications; the dock pulls the details. */
  onChange(listener: (change: ComputerChange) => void): Disposable;
  /** The computer the dock acts on (its launches name it); absent: the dock caller's own. */
  target?(): ComputerRef;
  /** Every computer of the server, for the switcher (absent: a server with one computer). */
  computers?(): DockComputerSummary[];
  /** The computer shown, as `computers()` names it. */
  watching?(): string | null;
  /** Shows another computer; throws NOT_FOUND for an unknown name. */
  watch?(name: string): void;
  /** The computer that ran a generation, for the activity's filter. */
  computerOf?(generation: number): string | null;
  /** What a person calls a caller (the MCP client's name instead of `mcp:<uuid>`). */
  callerLabel?(caller: string): string;
  /** The watched computer's checkpoints, newest first; null when it watches none. */
  checkpoints?(): Promise<DockCheckpointsState | null>;
  /** When the watched computer's generation launched (epoch ms), if one did. */
  launchedAt?(): number | null;
  terminals: TerminalSource | null;
  preview: PreviewSource | null;
}

/** A change in the agents the dock should show. */
export type AgentsChange =
  /** Definitions, next times, running or last runs changed: pull `list()` and `loadErrors()`. */
  | { kind: 'agents' }
  /** A run started, took a turn, made a tool call or ended: pull `run(runId)`. */
  | { kind: 'run'; runId: string };

/** A run with its tool calls, oldest first. */
export interface DockAgentRunDetails {
  run: DockAgentRun;
  calls: DockAgentCall[];
  /** More calls exist than were returned. */
  truncated: boolean;
}

/**
 * The agents as the dock sees them (see agents-adapter.ts for the AgentsService). A run started
 * here is an ordinary run with trigger `api`: its tool calls go through the gateway as the run's
 * own caller, under the agent's policy and allow-list.
 */
/**
 * The approvals panel's source. Decisions are made as the dock's caller; a page that watches
 * counts as an open dock session (the default rule of who waits for `ask` tools).
 */
export interface DockApprovals {
  state(): Promise<DockApprovalsState>;
  decide(
    id: string,
    decision: { approve: boolean; scope?: 'once' | 'session' | 'always'; reason?: string },
    by: string,
  ): Promise<void>;
  removeRule(ruleId: string, by: string): Promise<void>;
  /** Called on every request, decision and rule change; watching counts as a deciding dock page. */
  onChange(listener: () => void): Disposable;
  /** Approvals decided or waiting, newest first (the `/approvals` page). */
  history?: DockApprovalHistory;
}

/** One approval of the history page, in words a person reads. */
export interface DockApprovalHistoryRow {
  id: string;
  tool: string;
  summary: string;
  askedBy: string;
  requestedAt: number;
  status: string;
  scope: string | null;
  decidedBy: string | null;
  decidedAt: number | null;
  reason: string | null;
  /** The checkpoint taken before the approved call ran, or null. */
  checkpointId: string | null;
}

/** The newest approvals, at most `limit`. */
export type DockApprovalHistory = (limit: number) => Promise<DockApprovalHistoryRow[]>;

export interface DockAgents {
  list(): Promise<DockAgent[]>;
  loadErrors(): DockAgentLoadError[];
  /** Newest runs first, at most `limit`. */
  runs(limit: number): Promise<DockAgentRun[]>;
  run(runId: string): Promise<DockAgentRun | undefined>;
  /** The run with its tool calls (nested calls carry their depth), or undefined when unknown. */
  show(runId: string): Promise<DockAgentRunDetails | undefined>;
  /** Starts a run now; rejects with PaddockError (NOT_FOUND, INVALID_ARGUMENT, LIMIT_EXCEEDED) when refused. */
  start(name: string, input: string | undefined): Promise<{ runId: string }>;
  onChange(listener: (change: AgentsChange) => void): Disposable;
}

/**
 * The computer's tools for WebMCP: the page registers them in the browser, and an agent there
 * calls them through the gateway as the person signed in to the dock (`via: webmcp`), under
 * the same permissions, policy and audit as an MCP client's calls.
 */
export interface DockTools {
  /** The computer tools exactly as tools/list describes them to an MCP client. */
  list(): DockWebMcpTool[];
  /** Calls one tool; always resolves with an MCP CallToolResult (a refusal is `isError`). */
  call(name: string, args: Record<string, unknown>, signal: AbortSignal): Promise<Record<string, unknown>>;
}
