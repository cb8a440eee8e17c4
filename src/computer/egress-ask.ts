/**
 * A person allows a host on the spot: a connection that `policy.http.ask` covers waits while
 * the dock (and the CLI, on the same record) asks "allow this host for this computer / always /
 * deny". It is an approval of the approvals service like any tool's, so it is recorded, listed
 * and decided where those are: tool `egress:<host>:<port>`, source `egress`, the arguments name
 * the computer, the job and its principal, and it is the owner's to decide (the dock, the CLI),
 * whoever's job connected, since an answer widens the owner's policy. "Once" allows this connection; "for this session" becomes "for this
 * computer" (its generation); "always" is a standing approval rule (agent `*computers`) that every
 * computer's connections are decided with from then on. With no dock page open to decide, the
 * connection is refused at once: a program never hangs on a question nobody sees.
 */
import type { ApprovalService } from '../approvals/service.js';
import type { Approval, ApprovalRule } from '../approvals/types.js';
import type { Grant } from '../policy/types.js';
import type { Disposable } from '../shared/disposable.js';
import { randomId } from '../shared/ids.js';
import type { Logger } from '../shared/logger.js';
import { OWNER } from '../shared/principal.js';
import type { Tool } from '../tools/tool.js';
import type { EgressAnswer, EgressAsker, EgressQuestion } from './generation/egress-types.js';

/** The `agent` of egress approvals and of their "always" rules (no agent can be named so). */
export const EGRESS_APPROVAL_AGENT = '*computers';
/** The source of egress approvals. */
export const EGRESS_APPROVAL_SOURCE = 'egress';

/** What a person is told about an egress approval. */
export const EGRESS_APPROVAL_DESCRIPTION =
  'A program in a computer opened a connection to this host and port, which policy.http.ask lets a person allow; the program waits for your answer.\n\n' +
  'Approve once: this connection only. For this session: every connection of this computer to the host and port until it is relaunched. Always: every computer, kept as a rule you can remove. Deny: the program is refused and its job says so.';

/** The approval tool name of a destination. */
export function egressApprovalTool(host: string, port: number): string {
  return `egress:${host}:${port}`;
}

/** The destination of an egress rule's tool name (`egress:host:port`), or null. */
function destinationOf(tool: string): string | null {
  return tool.startsWith('egress:') ? tool.slice('egress:'.length) : null;
}

/** The stand-in tool an egress question is recorded as (it is never run). */
function questionTool(name: string): Tool {
  return {
    name,
    description: EGRESS_APPROVAL_DESCRIPTION,
    inputSchema: { type: 'object' },
    annotations: {},
    source: EGRESS_APPROVAL_SOURCE as Tool['source'],
    toolsets: [],
    execute: () => Promise.reject(new Error('an egress question is never run')),
  };
}

/** Asks through the approvals service; see the file's comment. */
export class ApprovalEgressAsker implements EgressAsker {
  private rules: Grant[] = [];
  private watching: Disposable | null = null;

  constructor(
    private readonly approvals: ApprovalService,
    private readonly logger: Logger,
    /** Longest a connection waits for an answer. */
    private readonly timeoutMs: number,
  ) {}

  /** Reads the standing "always" rules, and again whenever the rules change. */
  async start(): Promise<void> {
    await this.refresh();
    this.watching = this.approvals.watch({
      listener: (event) => {
        if (event.kind === 'rules') void this.refresh();
      },
    });
  }

  close(): void {
    this.watching?.dispose();
  }

  always(): readonly Grant[] {
    return this.rules;
  }

  async ask(question: EgressQuestion): Promise<EgressAnswer> {
    const { target, rule, principal } = question;
    const where = `${target.host}:${target.port}`;
    const tool = questionTool(egressApprovalTool(target.host, target.port));
    const ended = await this.approvals.askPerson({
      tool,
      input: {
        host: target.host,
        port: target.port,
        computer: question.computer,
        generation: question.generation,
        ...(principal.jobId ? { job: principal.jobId } : {}),
        ...(principal.principal ? { principal: principal.principal } : {}),
      },
      // the policy is the owner's, whoever's job connected: only the owner's deciders answer
      caller: {
        caller: principal.caller,
        principal: OWNER,
        via: principal.via,
        ...(principal.parentId ? { parentId: principal.parentId } : {}),
        attended: true,
        signal: question.gone,
        approvals: { agent: EGRESS_APPROVAL_AGENT },
      },
      invocationId: randomId('inv', 12),
      rule,
      deadline: Date.now() + this.timeoutMs,
    });
    if (ended === null) {
      return {
        allow: false,
        rule,
        reason: `${where} needs a person's answer (${rule}) and no dock page was open to ask; open the dock and retry, or add it to policy.http.allow`,
      };
    }
    if ('run' in ended) {
      return { allow: false, rule, reason: ended.run ? `${where} was not asked about` : ended.error.message };
    }
    return this.answerOf(ended, rule, where);
  }

  private answerOf(approval: Approval, rule: string, where: string): EgressAnswer {
    const label = `approval:${approval.id}`;
    if (approval.status === 'approved') {
      const scope =
        approval.scope === 'always' ? 'always' : approval.scope === 'session' ? 'computer' : 'once';
      this.logger.info('egress.approved', { approvalId: approval.id, destination: where, scope });
      return { allow: true, scope, label };
    }
    const by = approval.decidedBy ? ` by ${approval.decidedBy}` : '';
    const why = approval.reason ? `: ${approval.reason}` : '';
    const reason =
      approval.status === 'denied'
        ? `a person refused ${where}${by} (approval ${approval.id})${why}`
        : `nobody allowed ${where} in time (approval ${approval.id} ${approval.status})`;
    return { allow: false, rule: approval.status === 'denied' ? label : rule, reason };
  }

  private async refresh(): Promise<void> {
    let rules: ApprovalRule[];
    try {
      rules = await this.approvals.rules(false);
    } catch (e) {
      this.logger.warn('egress.rules_unread', { error: (e as Error).message });
      return;
    }
    this.rules = rules.flatMap((r) => {
      const entry = r.agent === EGRESS_APPROVAL_AGENT ? destinationOf(r.tool) : null;
      return entry ? [{ entry, label: `approvals.rules[${r.id}]` }] : [];
    });
  }
}
