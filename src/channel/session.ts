import type { ChannelFrame } from '../guest/protocol.js';
import { PaddockError, toPaddockError } from '../shared/errors.js';
import { randomId } from '../shared/ids.js';
import type { Logger } from '../shared/logger.js';
import type { Gateway } from '../tools/gateway.js';
import type { CallerContext, Tool } from '../tools/tool.js';
import {
  type ChannelReply,
  decodeRequest,
  encodeReply,
  encodeShellReply,
  MAX_CALLS_PER_COMMAND,
  MAX_FRAMES_PER_COMMAND,
  SHELL_REPLY_PREFIX,
} from './wire.js';

/** Who opened the channel: the command's caller and its `run_command` invocation. */
export interface ChannelGrant {
  /** The caller that started the job (an MCP session, an agent run…). */
  caller: CallerContext;
  /** Invocation id of the `run_command` (or `shell`) call: the parent of every channel call. */
  parentId: string;
  jobId: string;
  /** Epoch ms: the command's timeout bounds every call. */
  deadline: number;
}

/** Tools the channel never offers: the computer's own (a command cannot drive its own computer). */
export function channelOffers(tool: Tool): boolean {
  return !tool.toolsets.includes('computer');
}

/**
 * The host side of one command's tool channel: checks each frame (nonce already checked by
 * the guest), the call budget, the deadline and that the channel is open, then dispatches
 * through the gateway as caller `channel:<job>` — unattended, so only `auto` tools run.
 */
export class ChannelSession {
  readonly nonce = randomId('', 18);
  private used = 0;
  private frames = 0;
  /** Set once the channel is closed: what every later call is refused with. */
  private closedBy: PaddockError | null = null;
  private readonly seen = new Set<string>();
  private readonly controller = new AbortController();
  private readonly caller: CallerContext;
  private readonly jobKey: string;

  constructor(
    private readonly gateway: Gateway,
    private readonly grant: ChannelGrant,
    private readonly logger: Logger,
  ) {
    // the job's span (a child of its run_command's): the parent of its channel calls until it ends
    this.jobKey = `job:${grant.jobId}`;
    gateway.tracer.start(`job ${grant.jobId}`, {
      key: this.jobKey,
      parentKey: grant.parentId,
      attributes: { 'paddock.job.id': grant.jobId, 'paddock.caller': grant.caller.caller },
    });
    const outer = grant.caller.allowTool;
    this.caller = {
      caller: `channel:${grant.jobId}`,
      // a command's calls act for whoever started the command (owner, client or agent)
      principal: grant.caller.principal,
      onBehalfOf: grant.caller.onBehalfOf ?? grant.caller.caller,
      via: 'channel',
      parentId: grant.parentId,
      jobId: grant.jobId,
      deadline: grant.deadline,
      signal: this.controller.signal,
      attended: false,
      ...(grant.caller.runId ? { runId: grant.caller.runId } : {}),
      ...(grant.caller.policy ? { policy: grant.caller.policy } : {}),
      // a command's tool calls act on the computer that runs it
      ...(grant.caller.computer ? { computer: grant.caller.computer } : {}),
      allowTool: (name, tool) => channelOffers(tool) && (outer ? outer(name, tool) : true),
    };
  }

  /** Calls made so far (what `read_job` reports as `toolCalls`). */
  get toolCalls(): number {
    return this.used;
  }

  /**
   * The command's root exited: later calls fail at once with CHANNEL_CLOSED; running ones are
   * cancelled. With `reason` (its caller was revoked) they fail with that instead.
   */
  close(reason?: PaddockError): void {
    if (this.closedBy) return;
    this.gateway.tracer.endKey(this.jobKey);
    this.closedBy =
      reason ??
      new PaddockError(
        'CHANNEL_CLOSED',
        'The command that opened this tool channel has ended; background processes cannot call tools. Call tools from the command itself.',
      );
    this.controller.abort(
      reason ?? new PaddockError('CHANNEL_CLOSED', 'The command that opened the tool channel has ended.'),
    );
  }

  /** Handles one frame; resolves with the reply line, or null when the frame has no id to answer. */
  async handle(frame: ChannelFrame): Promise<string | null> {
    const id = frame.id;
    if (!id) {
      this.logger.warn('channel.malformed', {
        jobId: this.grant.jobId,
        reason: frame.kind === 'malformed' ? frame.reason : frame.kind,
      });
      return null;
    }
    const reply = await this.answer(id, frame);
    return id.startsWith(SHELL_REPLY_PREFIX) ? encodeShellReply(reply) : encodeReply(reply);
  }

  private async answer(id: string, frame: ChannelFrame): Promise<ChannelReply> {
    const fail = (e: unknown): ChannelReply => {
      const err = toPaddockError(e);
      return { id, ok: false, error: err.toJSON() as ChannelReply extends { error: infer E } ? E : never };
    };
    this.frames++;
    if (this.frames > MAX_FRAMES_PER_COMMAND) {
      return fail(
        new PaddockError(
          'LIMIT_EXCEEDED',
          `A command may send at most ${MAX_FRAMES_PER_COMMAND} channel requests; start a new command.`,
        ),
      );
    }
    if (this.seen.has(id)) {
      return fail(
        new PaddockError(
          'INVALID_ARGUMENT',
          `Request id "${id}" was already used in this command; use a new id per call.`,
        ),
      );
    }
    this.seen.add(id);
    if (frame.kind === 'oversized') {
      return fail(
        new PaddockError(
          'LIMIT_EXCEEDED',
          'The request is over 1 MiB; send smaller arguments (write large data to a file and pass its path).',
        ),
      );
    }
    if (frame.kind === 'malformed')
      return fail(new PaddockError('INVALID_ARGUMENT', `Malformed channel frame: ${frame.reason}.`));
    if (this.closedBy) return fail(this.closedBy);
    if (Date.now() >= this.grant.deadline) {
      return fail(
        new PaddockError(
          'TIMEOUT',
          "The command's timeout has passed; raise timeoutMs on the command if it needs longer.",
        ),
      );
    }
    let request: ReturnType<typeof decodeRequest>;
    try {
      request = decodeRequest(frame.payload);
    } catch (e) {
      return fail(e);
    }
    if (request.op === 'list') {
      const tools = this.gateway.listTools(this.caller).map((t) => ({
        name: t.name,
        description: t.description,
        inputSchema: t.inputSchema,
      }));
      return { id, ok: true, result: { tools } };
    }
    if (this.used >= MAX_CALLS_PER_COMMAND) {
      return fail(
        new PaddockError(
          'LIMIT_EXCEEDED',
          `A command may make at most ${MAX_CALLS_PER_COMMAND} tool calls; split the work across several commands.`,
        ),
      );
    }
    this.used++;
    const outcome = await this.gateway.call(request.name, request.args, this.caller);
    if (!outcome.ok) return fail(outcome.error);
    const r = outcome.result;
    return {
      id,
      ok: true,
      result: { structured: r.structured ?? null, content: r.content ?? null, isError: r.isError === true },
    };
  }
}
