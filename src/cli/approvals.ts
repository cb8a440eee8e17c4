/**
 * `paddock approvals`: the approvals of `ask` calls. Every request goes to the running server
 * over its unix socket, so a decision wakes the waiting call at once; with no server running,
 * `list`, `show` and `rules` read the data directory's database (no call can be waiting then).
 */
import { existsSync } from 'node:fs';
import type { ApprovalRequestMessage } from '../approvals/requests.js';
import type { ApprovalView } from '../approvals/service.js';
import type { Approval, ApprovalRule } from '../approvals/types.js';
import { locateConfig } from '../config/locate.js';
import { instancePaths } from '../mcp/instance.js';
import { knock } from '../mcp/socket-client.js';
import { PaddockError } from '../shared/errors.js';
import { resolveStoreTarget } from '../store/target.js';
import { out, parseCommandArgs, UsageError } from './args.js';
import { loadFor, withStores } from './context.js';

const HELP = `Usage: paddock approvals <command>

  list [--all] [--json]            calls waiting for a person (--all: recent decisions too)
  show ID [--json]                 one approval: tool, caller, lineage, the full arguments
  approve ID [--session | --always] [--reason TEXT]
                                   run the waiting call (--session: this tool for the rest of the
                                   caller's session; --always: this tool for this agent, a rule)
  deny ID [--reason TEXT]          refuse it; the caller is told the reason
  rules [--all] [--json]           "always allow" rules written by decisions
  rules remove RULE_ID             undo one: the tool asks again from the next call

Decisions go to the running server, which wakes the waiting call at once.`;

const OPTIONS = {
  config: { type: 'string' as const },
  all: { type: 'boolean' as const },
  json: { type: 'boolean' as const },
  session: { type: 'boolean' as const },
  always: { type: 'boolean' as const },
  reason: { type: 'string' as const },
  help: { type: 'boolean' as const, short: 'h' },
};

export async function approvalsCommand(args: string[]): Promise<number> {
  const { values, positionals } = parseCommandArgs('approvals', args, OPTIONS);
  const [sub, id, extra] = positionals;
  if (values.help || !sub) {
    out(HELP);
    return values.help ? 0 : 64;
  }
  const request = requestFor(sub, id, extra, values);
  const location = locateConfig(typeof values.config === 'string' ? { configPath: values.config } : {});
  const reply = await send(location.dataDir, request, values);
  const json = values.json === true;
  if ('approvals' in reply) {
    const list = reply.approvals as ApprovalView[];
    if (json) out(JSON.stringify(list));
    else if (list.length === 0) out(values.all ? 'No approvals yet.' : 'Nothing waits for approval.');
    else for (const a of list) out(summaryLine(a));
  } else if ('rules' in reply) {
    const rules = reply.rules as ApprovalRule[];
    if (json) out(JSON.stringify(rules));
    else if (rules.length === 0) out('No "always allow" rules.');
    else for (const r of rules) out(ruleLine(r));
  } else if ('rule' in reply) {
    const rule = reply.rule as ApprovalRule;
    out(json ? JSON.stringify(rule) : `Removed ${ruleLine(rule)}`);
  } else {
    const approval = reply.approval as ApprovalView;
    if (json) out(JSON.stringify(approval));
    else if (sub === 'show') out(details(approval));
    else
      out(
        `${approval.id}: ${approval.status}${approval.scope && approval.scope !== 'once' ? ` (${approval.scope})` : ''}`,
      );
  }
  return 0;
}

function requestFor(
  sub: string,
  id: string | undefined,
  extra: string | undefined,
  values: Record<string, unknown>,
): ApprovalRequestMessage {
  const reason = typeof values.reason === 'string' ? values.reason : undefined;
  const needId = (what: string) => {
    if (!id)
      throw new UsageError(`paddock approvals ${what} needs an approval id; see \`paddock approvals list\`.`);
    return id;
  };
  switch (sub) {
    case 'list':
      return { action: 'list', all: values.all === true };
    case 'show':
      return { action: 'show', id: needId('show') };
    case 'approve': {
      if (values.session && values.always) throw new UsageError('Give --session or --always, not both.');
      const scope = values.always ? 'always' : values.session ? 'session' : 'once';
      return { action: 'approve', id: needId('approve'), scope, ...(reason ? { reason } : {}) };
    }
    case 'deny':
      return { action: 'deny', id: needId('deny'), ...(reason ? { reason } : {}) };
    case 'rules':
      if (id === undefined) return { action: 'rules', all: values.all === true };
      if (id !== 'remove' || !extra) throw new UsageError('Usage: paddock approvals rules remove RULE_ID');
      return { action: 'remove-rule', id: extra };
    default:
      throw new UsageError(`Unknown approvals command "${sub}". See \`paddock approvals --help\`.`);
  }
}

/** Sends the request to the running server; without one, answers what the database can. */
async function send(
  dataDir: string,
  request: ApprovalRequestMessage,
  values: Record<string, unknown>,
): Promise<Record<string, unknown>> {
  const paths = instancePaths(dataDir);
  const result = await knock(paths, { op: 'approvals', approvals: request });
  if (result.kind === 'answered') {
    result.socket.destroy();
    const reply = result.reply;
    if (!reply.ok) throw new PaddockError(reply.code as never, reply.message);
    return reply;
  }
  if (request.action === 'approve' || request.action === 'deny') {
    throw new PaddockError(
      'NOT_RUNNING',
      `No Paddock server runs for ${dataDir}, so no call waits for approval; nothing was decided.`,
    );
  }
  const loaded = await loadFor(values);
  const target = resolveStoreTarget(loaded.config.store, loaded.dataDir);
  if (target.kind === 'sqlite' && !existsSync(target.file))
    return request.action === 'rules' ? { rules: [] } : { approvals: [] };
  return withStores(values, async ({ approvals: store }) => {
    const view = (a: Approval): ApprovalView => ({ ...a, description: null, waiting: false });
    switch (request.action) {
      case 'list':
        return { approvals: (await store.list({ pendingOnly: !request.all })).map(view) };
      case 'show': {
        const a = await store.get(request.id);
        if (!a)
          throw new PaddockError(
            'NOT_FOUND',
            `No approval "${request.id}"; see \`paddock approvals list --all\`.`,
          );
        return { approval: view(a) };
      }
      case 'rules':
        return { rules: await store.rules(request.all ?? false) };
      case 'remove-rule':
        return { rule: await store.removeRule(request.id, 'cli', Date.now()) };
    }
  });
}

function when(ms: number | null): string {
  return ms === null ? '-' : new Date(ms).toISOString();
}

function summaryLine(a: ApprovalView): string {
  const end =
    a.status === 'pending'
      ? `expires ${when(a.expiresAt)}`
      : `${a.decidedBy ? `by ${a.decidedBy} ` : ''}${when(a.decidedAt)}`;
  const checkpoint = a.checkpointId ? `  checkpoint ${a.checkpointId} before it` : '';
  return `${a.id}  ${a.status.padEnd(11)}  ${a.tool}  ${a.caller}${a.agent ? ` (agent ${a.agent})` : ''}  ${end}${checkpoint}`;
}

function ruleLine(r: ApprovalRule): string {
  const state = r.removedAt === null ? '' : `  removed by ${r.removedBy} ${when(r.removedAt)}`;
  return `${r.id}  always allow ${r.tool} for agent ${r.agent}  (by ${r.createdBy} ${when(r.createdAt)}${r.approvalId ? `, from ${r.approvalId}` : ''})${state}`;
}

function details(a: ApprovalView): string {
  let args: string;
  try {
    args = JSON.stringify(JSON.parse(a.arguments), null, 2);
  } catch {
    args = a.arguments;
  }
  return [
    `Approval ${a.id}: ${a.status}${a.waiting ? ' (a call waits)' : ''}`,
    `  Tool:        ${a.tool} (${a.source})`,
    ...(a.description ? [`  About:       ${a.description.split('\n')[0]}`] : []),
    `  Caller:      ${a.caller} via ${a.via}${a.agent ? `, agent ${a.agent}` : ''}${a.runId ? `, run ${a.runId}` : ''}`,
    ...(a.parentId ? [`  Parent:      ${a.parentId}`] : []),
    `  Invocation:  ${a.invocationId}`,
    `  Rule:        ${a.permissionRule}`,
    `  Requested:   ${when(a.requestedAt)}`,
    `  Expires:     ${when(a.expiresAt)}`,
    ...(a.status === 'pending'
      ? []
      : [
          `  Decided:     ${when(a.decidedAt)}${a.decidedBy ? ` by ${a.decidedBy}` : ''}${a.decidedVia ? ` (${a.decidedVia})` : ''}${a.scope ? `, ${a.scope}` : ''}`,
          ...(a.reason ? [`  Reason:      ${a.reason}`] : []),
        ]),
    ...(a.checkpointId
      ? [`  Checkpoint:  ${a.checkpointId} (taken before the call ran; restore_checkpoint undoes the call)`]
      : []),
    `  Arguments (sha256 ${a.argumentsSha256}):`,
    ...args.split('\n').map((l) => `    ${l}`),
  ].join('\n');
}
