/**
 * What the person does at the dock, arriving over the websocket: launch, keystrokes, resize,
 * terminal selection and attachment, preview navigation. Every message is validated against
 * the protocol; failures come back as a `reply` with the error's code and message.
 */
import type { RawData, WebSocket } from 'ws';
import { PaddockError, toPaddockError } from '../../shared/errors.js';
import type { Logger } from '../../shared/logger.js';
import type { DockCheckpointCalls } from './checkpoint-calls.js';
import type { DockClient } from './client.js';
import { type ClientMessage, clientMessageSchema } from './protocol.js';
import type { Disposable, DockAgents, DockApprovals, DockComputer, DockTools } from './sources.js';
import { type DockToolReview, isTrustMessage, type TrustMessage, trustActionOf } from './trust.js';
import type { DockVmHosts } from './vm-hosts.js';
import { type WebMcpMessage, webMcpActionOf } from './webmcp.js';

/** Launches a profile (through the gateway when `launch_computer` is registered, so it is audited). */
export type DockLauncher = (profileId: string, options?: { keepWorkspace?: boolean }) => Promise<void>;

/** One connected page. */
export interface DockConnection {
  ws: WebSocket;
  client: DockClient;
  /** Terminal subscriptions of this page, by terminal id. */
  terminals: Map<string, Disposable>;
  /** WebMCP calls this page waits for, by call id (aborted when the page goes away). */
  calls: Map<string, AbortController>;
  alive: boolean;
}

export interface DockActionDeps {
  computer: DockComputer | null;
  /** The agents; without them `agent.*` requests are refused. */
  agents?: DockAgents | null;
  /** The approvals; without them `approval.*` requests are refused. */
  approvals?: DockApprovals | null;
  logger: Logger;
  caller: string;
  launch?: DockLauncher;
  /** The computer tools for WebMCP; without them `webmcp.*` requests are refused. */
  tools?: DockTools | null;
  /** Hosts of browser computers; without them `vm.*` requests are refused. */
  vmHosts?: DockVmHosts | null;
  /** Upstream tools awaiting review; without it there is nothing to decide. */
  toolReview?: DockToolReview | null;
  /** Restore and fork from the timeline; without them `checkpoint.*` requests are refused. */
  checkpoints?: DockCheckpointCalls | null;
}

const MAX_TERMINAL_SUBSCRIPTIONS = 16;

export class DockActions {
  private readonly agentAction: (conn: DockConnection, message: AgentMessage) => Promise<string>;
  private readonly webMcpAction: (conn: DockConnection, message: WebMcpMessage) => string;
  private readonly trustAction: (conn: DockConnection, message: TrustMessage) => Promise<string>;

  constructor(private readonly deps: DockActionDeps) {
    this.agentAction = agentActionOf(deps);
    this.webMcpAction = webMcpActionOf(deps.tools, deps.logger);
    this.trustAction = trustActionOf({
      computer: deps.computer,
      toolReview: deps.toolReview ?? null,
      caller: deps.caller,
      logger: deps.logger,
    });
  }

  /** Parses one message from a page, performs it, and replies when asked or when it failed. */
  async handle(conn: DockConnection, data: RawData, isBinary: boolean): Promise<void> {
    let message: ClientMessage;
    try {
      if (isBinary) throw new PaddockError('INVALID_ARGUMENT', 'Send JSON text messages.');
      const parsed = clientMessageSchema.safeParse(JSON.parse(data.toString()));
      if (!parsed.success) {
        const issue = parsed.error.issues[0];
        throw new PaddockError(
          'INVALID_ARGUMENT',
          `Invalid dock message at ${issue?.path.join('.') || '(root)'}: ${issue?.message ?? 'unknown shape'}. Reload the page.`,
        );
      }
      message = parsed.data;
    } catch (e) {
      const error =
        e instanceof SyntaxError
          ? new PaddockError('INVALID_ARGUMENT', 'Messages must be JSON; reload the page.')
          : toPaddockError(e);
      conn.client.send({
        type: 'reply',
        requestId: null,
        request: 'unknown',
        ok: false,
        code: error.code,
        message: error.message,
      });
      return;
    }
    try {
      const done = await this.perform(conn, message);
      if (message.requestId) {
        conn.client.send({
          type: 'reply',
          requestId: message.requestId,
          request: message.type,
          ok: true,
          code: null,
          message: done,
        });
      }
    } catch (e) {
      const error = toPaddockError(e);
      if (error.code === 'INTERNAL')
        this.deps.logger.error('dock.action_failed', { type: message.type, error: error.message });
      conn.client.send({
        type: 'reply',
        requestId: message.requestId ?? null,
        request: message.type,
        ok: false,
        code: error.code,
        message: error.message,
      });
    }
  }

  private async perform(conn: DockConnection, message: ClientMessage): Promise<string> {
    if (isTrustMessage(message)) return this.trustAction(conn, message);
    if (message.type === 'agent.run' || message.type === 'agent.show') return this.agentAction(conn, message);
    if (message.type === 'approval.decide' || message.type === 'approval.rule.remove')
      return this.approvalAction(message);
    if (message.type === 'webmcp.list' || message.type === 'webmcp.call')
      return this.webMcpAction(conn, message);
    if (message.type === 'vm.host' || message.type === 'vm.serial') {
      const hosts = this.deps.vmHosts;
      if (!hosts) throw new PaddockError('UNSUPPORTED_CAPABILITY', 'This server runs no browser computers.');
      if (message.type === 'vm.host') {
        hosts.offer(conn);
        return 'This page can host a browser computer.';
      }
      hosts.fromPage(conn, message.vm, message.port, message.data);
      return 'Delivered.';
    }
    const computer = this.deps.computer;
    if (!computer)
      throw new PaddockError('UNSUPPORTED_CAPABILITY', 'This server runs without the computer service.');
    switch (message.type) {
      case 'launch': {
        this.deps.vmHosts?.prefer(conn);
        const keep = message.keepWorkspace ? { keepWorkspace: true } : {};
        await (this.deps.launch ?? ((id, options) => computer.launch(id, options)))(message.profileId, keep);
        this.deps.logger.info('dock.launch', {
          profileId: message.profileId,
          caller: this.deps.caller,
        });
        return `Launching ${message.profileId}.`;
      }
      case 'computer.watch':
        if (!computer.watch) throw notYet('Switching computers');
        computer.watch(message.name);
        return `Watching ${message.name}.`;
      case 'preview.navigate': {
        if (!computer.preview) throw notYet('The preview');
        const state = await computer.preview.navigate(message.path, message.port);
        return `Navigating to ${state.path ?? message.path} on port ${state.port ?? message.port ?? ''}.`;
      }
      case 'preview.ports': {
        if (!computer.preview) throw notYet('The preview');
        conn.client.send({ type: 'preview.ports', ports: computer.preview.ports() });
        return 'Listed the ports.';
      }
      case 'job.cancel':
        return this.cancelJob(message.jobId);
      case 'checkpoint.restore':
      case 'checkpoint.fork':
        return this.checkpointAction(computer, message);
      default:
        return this.terminalAction(conn, computer, message);
    }
  }

  /** cancel_job through the gateway, as the person at the dock (audited like any call). */
  private async cancelJob(jobId: string): Promise<string> {
    const tools = this.deps.tools;
    if (!tools)
      throw new PaddockError('UNSUPPORTED_CAPABILITY', 'This server cannot cancel jobs from the dock.');
    const result = await tools.call('cancel_job', { jobId }, AbortSignal.timeout(30_000));
    const answer = result.structuredContent as
      | { status?: string; code?: string; message?: string }
      | undefined;
    if (result.isError) {
      throw new PaddockError(
        (answer?.code as never) ?? 'INTERNAL',
        answer?.message ?? `Could not cancel ${jobId}; check the jobs view and try again.`,
      );
    }
    return answer?.status === 'already_finished' ? `${jobId} had already finished.` : `Cancelled ${jobId}.`;
  }

  /** A restore or a fork from the timeline, on the computer the page showed when the person chose. */
  private async checkpointAction(computer: DockComputer, message: CheckpointMessage): Promise<string> {
    const calls = this.deps.checkpoints;
    if (!calls) throw notYet('Restoring and forking checkpoints');
    const watching = computer.watching?.() ?? null;
    if (watching !== message.computer)
      throw new PaddockError(
        'INVALID_ARGUMENT',
        `The dock shows ${watching ?? 'no computer'} now, not ${message.computer}; pick the checkpoint again from its timeline.`,
      );
    if (message.type === 'checkpoint.restore') {
      const r = await calls.restore(message.checkpointId);
      this.deps.logger.info('dock.restore', { checkpointId: message.checkpointId, caller: this.deps.caller });
      return `Restoring checkpoint ${message.checkpointId} as generation ${r.generation}; the state it left is checkpoint ${r.savedAs}.`;
    }
    const r = await calls.fork(message.checkpointId, message.name);
    this.deps.logger.info('dock.fork', { checkpointId: message.checkpointId, caller: this.deps.caller });
    return `Forked checkpoint ${message.checkpointId} into ${r.name}; it boots.`;
  }

  /** A decision of the signed-in person (the websocket is reached only with a session). */
  private async approvalAction(message: ApprovalMessage): Promise<string> {
    const approvals = this.deps.approvals;
    if (!approvals) throw new PaddockError('UNSUPPORTED_CAPABILITY', 'This server keeps no approvals.');
    if (message.type === 'approval.rule.remove') {
      await approvals.removeRule(message.ruleId, this.deps.caller);
      return `Removed rule ${message.ruleId}; the tool asks again from its next call.`;
    }
    await approvals.decide(
      message.id,
      {
        approve: message.approve,
        ...(message.scope ? { scope: message.scope } : {}),
        ...(message.reason ? { reason: message.reason } : {}),
      },
      this.deps.caller,
    );
    this.deps.logger.info('dock.approval', {
      approvalId: message.id,
      approve: message.approve,
      caller: this.deps.caller,
    });
    return message.approve ? `Approved ${message.id}.` : `Denied ${message.id}.`;
  }

  private async terminalAction(
    conn: DockConnection,
    computer: DockComputer,
    message: ClientMessage,
  ): Promise<string> {
    const terminals = computer.terminals;
    if (!terminals) throw notYet('Terminals');
    switch (message.type) {
      case 'terminal.input':
        await terminals.write(message.terminalId, message.data, this.deps.caller);
        return 'Delivered.';
      case 'terminal.resize':
        await terminals.resize(message.terminalId, message.cols, message.rows);
        return 'Resized.';
      case 'terminal.activate':
        await terminals.activate(message.terminalId);
        return 'Activated.';
      case 'terminal.attach': {
        const { terminalId } = message;
        conn.terminals.get(terminalId)?.dispose();
        conn.terminals.delete(terminalId);
        while (conn.terminals.size >= MAX_TERMINAL_SUBSCRIPTIONS) {
          const [oldest, sub] = conn.terminals.entries().next().value ?? [];
          if (oldest === undefined || !sub) break;
          sub.dispose();
          conn.terminals.delete(oldest);
        }
        conn.client.send({ type: 'terminal.attached', terminalId, fromCursor: message.fromCursor ?? null });
        const sub = terminals.subscribe(terminalId, message.fromCursor, (chunk) =>
          conn.client.send({
            type: 'terminal.output',
            terminalId,
            data: chunk.data,
            cursor: chunk.cursor,
            gap: chunk.gap,
          }),
        );
        conn.terminals.set(terminalId, sub);
        return 'Attached.';
      }
      default:
        throw new PaddockError(
          'INVALID_ARGUMENT',
          `Unknown dock request "${message.type}"; reload the page.`,
        );
    }
  }
}

type AgentMessage = Extract<ClientMessage, { type: 'agent.run' | 'agent.show' }>;
type CheckpointMessage = Extract<ClientMessage, { type: 'checkpoint.restore' | 'checkpoint.fork' }>;
type ApprovalMessage = Extract<ClientMessage, { type: 'approval.decide' | 'approval.rule.remove' }>;

/** Runs an agent now (trigger `api`) or sends one run's details to the asking page. */
function agentActionOf(deps: DockActionDeps) {
  return async (conn: DockConnection, message: AgentMessage): Promise<string> => {
    const agents = deps.agents;
    if (!agents) throw new PaddockError('UNSUPPORTED_CAPABILITY', 'This server runs without agents.');
    if (message.type === 'agent.run') {
      const { runId } = await agents.start(message.name, message.input);
      deps.logger.info('dock.agent_run', { agent: message.name, runId, caller: deps.caller });
      conn.client.send({
        type: 'agent.started',
        agent: message.name,
        runId,
        requestId: message.requestId ?? null,
      });
      return `Started ${message.name} (run ${runId}).`;
    }
    const details = await agents.show(message.runId);
    if (!details)
      throw new PaddockError('NOT_FOUND', `There is no run "${message.runId}"; pick one from the runs list.`);
    conn.client.send({ type: 'agent.details', ...details });
    return `Run ${message.runId}.`;
  };
}

function notYet(what: string): PaddockError {
  return new PaddockError('UNSUPPORTED_CAPABILITY', `${what} is not available on this server yet.`);
}
