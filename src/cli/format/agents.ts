import type { RunDetails } from '../../agents/service.js';
import type { AgentSummary } from '../../agents/summary.js';
import type { AgentLoadError, AgentRun } from '../../agents/types.js';
import { formatAuditRow, formatDuration } from './audit-row.js';

const clean = (text: string) => text.replace(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/g, '?');
const iso = (ms: number | null) => (ms === null ? '-' : new Date(ms).toISOString().replace('.000Z', 'Z'));

/** `paddock agents list`: one block per agent, then the agents that did not load. */
export function formatAgentList(agents: readonly AgentSummary[], errors: readonly AgentLoadError[]): string {
  const blocks: string[] = [];
  for (const a of agents) {
    const lines = [`${a.name}  (${a.provider} / ${a.model})`, `  ${clean(a.description)}`];
    const facts = [
      a.mcpServers.length ? `servers: ${a.mcpServers.join(', ')}` : '',
      a.skills.length ? `skills: ${a.skills.join(', ')}` : '',
      a.notify.length ? `notify: ${a.notify.join(', ')}` : '',
      a.tools ? `tools: ${a.tools.join(', ')}` : 'tools: built-ins + servers',
      a.narrowedPolicy ? 'policy: narrowed' : '',
    ].filter(Boolean);
    lines.push(`  ${facts.join('   ')}`);
    for (const s of a.schedules) {
      lines.push(`  schedule: ${s.cron}${s.timezone ? ` (${s.timezone})` : ''}  next ${iso(s.next)}`);
    }
    if (a.running) lines.push(`  running: ${a.running}`);
    if (a.lastRun)
      lines.push(
        `  last run: ${a.lastRun.id} ${a.lastRun.status} (${a.lastRun.trigger}, ${iso(a.lastRun.startedAt)})`,
      );
    for (const w of a.warnings) lines.push(`  warning: ${clean(w)}`);
    blocks.push(lines.join('\n'));
  }
  if (agents.length === 0 && errors.length === 0) {
    blocks.push('No agents yet: create .paddock/agents/<name>/AGENT.md (see docs/agents.md).');
  }
  for (const e of errors) blocks.push(formatLoadError(e));
  return blocks.join('\n\n');
}

/** One agent that did not load: its file and one line per problem. */
export function formatLoadError(e: AgentLoadError): string {
  return [`${e.agent}: NOT LOADED (${e.file})`, ...e.problems.map((p) => `  ${clean(p)}`)].join('\n');
}

/** One line per run: id, agent, trigger, status, start, duration, turns, tokens. */
export function formatRunRow(run: AgentRun): string {
  const duration = run.endedAt === null ? 'running' : formatDuration(run.endedAt - run.startedAt);
  return [
    run.id.padEnd(30),
    run.agent.padEnd(20),
    run.trigger.padEnd(9),
    (run.status === 'running' && run.waitingApproval ? 'waiting for approval' : run.status).padEnd(10),
    iso(run.startedAt),
    duration.padStart(8),
    `${run.turns} turns`.padStart(9),
    `${run.inputTokens + run.outputTokens} tok`,
  ].join('  ');
}

/** `paddock agents show`: the run, its answer or error, and its calls indented by depth. */
export function formatRunDetails(details: RunDetails): string {
  const { run, calls } = details;
  const lines = [
    formatRunRow(run),
    `  provider ${run.provider} / ${run.model}${run.scheduledAt !== null ? `, scheduled for ${iso(run.scheduledAt)}` : ''}`,
  ];
  if (run.input) lines.push(`  input: ${clean(run.input.slice(0, 500))}`);
  if (run.error) lines.push(`  error (${run.errorCode ?? 'UNKNOWN'}): ${clean(run.error)}`);
  for (const d of run.deliveries) {
    lines.push(
      `  notify ${d.channel}: ${d.ok ? `sent ${d.sentAt ?? ''}` : `FAILED ${clean(d.error ?? '')}`}`,
    );
  }
  lines.push('', `Tool calls (${calls.length}):`);
  for (const call of calls) lines.push(`${'  '.repeat(call.depth)}${formatAuditRow(call, { utc: true })}`);
  if (run.finalAnswer) lines.push('', 'Final answer:', clean(run.finalAnswer));
  return lines.join('\n');
}
