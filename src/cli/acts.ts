/**
 * What the CLI's acting commands do once their arguments are parsed: call a tool, list or call
 * upstream servers, run an agent, boot a launch link. An act runs on a {@link Paddock} — the
 * running server's when one runs for the data directory (it receives the act over its unix
 * socket, see `remote.ts`), else one built for this command — and writes through an
 * {@link ActIo}, so what a person sees and the exit code are the same either way.
 */
import { z } from 'zod';
import { decideReview, serverReview } from '../integrations/review.js';
import type { IntegrationsService } from '../integrations/service.js';
import type { Paddock } from '../main.js';
import { sleep } from '../shared/abort.js';
import { PaddockError } from '../shared/errors.js';
import { neutralizeControls } from '../shared/terminal-text.js';
import { formatAgentList, formatRunDetails, formatRunRow } from './format/agents.js';
import { renderError, renderToolResult, serverLogs, serversList, serverTools } from './format/servers.js';
import { cliCaller, printToolRows, toolRows } from './tool-rows.js';

/** One acting command with its parsed arguments: the contract between the CLI and the server. */
export const CliActSchema = z.discriminatedUnion('command', [
  z.object({ command: z.literal('tools.list'), json: z.boolean() }),
  z.object({
    command: z.literal('tools.call'),
    name: z.string().min(1),
    input: z.unknown(),
    timeoutMs: z.number().positive().optional(),
  }),
  z.object({
    command: z.literal('servers'),
    sub: z.enum(['list', 'tools', 'logs', 'call', 'review']),
    name: z.string(),
    input: z.record(z.string(), z.unknown()).optional(),
    json: z.boolean(),
    /** `review` only: decide instead of showing. */
    decision: z.enum(['accept', 'reject']).optional(),
    /** `review` only: the upstream tools to decide (all pending ones when absent). */
    tools: z.array(z.string().min(1)).max(1000).optional(),
  }),
  z.object({
    command: z.literal('agents'),
    sub: z.enum(['list', 'run', 'runs', 'show']),
    arg: z.string().optional(),
    input: z.string().optional(),
    limit: z.number().int().min(1).max(1000),
    json: z.boolean(),
  }),
  z.object({ command: z.literal('launch'), linkId: z.string().min(1), json: z.boolean() }),
]);

export type CliAct = z.infer<typeof CliActSchema>;

/** Where an act writes: raw text to the person's stdout or stderr. */
export interface ActIo {
  write(stream: 'stdout' | 'stderr', text: string): void;
}

/** One line, with control sequences neutralised: nothing a tool wrote may drive the terminal. */
function line(io: ActIo, stream: 'stdout' | 'stderr', text: string): void {
  io.write(stream, `${neutralizeControls(text)}\n`);
}

/** Runs `act` on `p`; `signal` is the person's Ctrl-C. Returns the exit code. */
export async function performAct(p: Paddock, act: CliAct, io: ActIo, signal: AbortSignal): Promise<number> {
  switch (act.command) {
    case 'tools.list':
      return toolsList(p, act.json, io);
    case 'tools.call':
      return toolsCall(p, act, io, signal);
    case 'servers':
      return servers(p, act, io);
    case 'agents':
      return agents(p, act, io, signal);
    case 'launch':
      return launch(p, act.linkId, act.json, io, signal);
  }
}

/** Exit code of a command the person interrupted with Ctrl-C (128 + SIGINT). */
const INTERRUPTED = 130;

/**
 * Calls a tool as the CLI. Ctrl-C ends the call's wait; a job the call started and that still
 * runs is cancelled (through the gateway, so it is audited) and named, so nothing runs on
 * unseen to its timeout.
 */
async function toolsCall(
  p: Paddock,
  act: Extract<CliAct, { command: 'tools.call' }>,
  io: ActIo,
  signal: AbortSignal,
): Promise<number> {
  if (!p.registry.get(act.name)) await discovered(p.integrations);
  const outcome = await p.gateway.call(act.name, act.input, cliCaller(act.timeoutMs, signal));
  if (signal.aborted) {
    const structured = outcome.ok ? outcome.result.structured : undefined;
    const jobId = typeof structured?.jobId === 'string' ? structured.jobId : undefined;
    if (!jobId || structured?.terminationObserved === true) {
      line(io, 'stderr', `paddock: interrupted; the call to ${act.name} was abandoned.`);
      return INTERRUPTED;
    }
    const cancel = await p.gateway.call('cancel_job', { jobId }, cliCaller());
    line(
      io,
      'stderr',
      cancel.ok && !cancel.result.isError
        ? `paddock: interrupted; cancelled job ${jobId} and every process it started.`
        : `paddock: interrupted, but job ${jobId} could not be cancelled: ${cancel.ok ? JSON.stringify(cancel.result.structured ?? cancel.result.content) : cancel.error.message} Cancel it with \`paddock tools call cancel_job '{"jobId":"${jobId}"}'\`.`,
    );
    return INTERRUPTED;
  }
  if (outcome.ok) {
    const r = outcome.result;
    line(io, 'stdout', JSON.stringify(r.structured ?? r.content ?? {}, null, 2));
    return r.isError ? 1 : 0;
  }
  io.write('stderr', `${JSON.stringify(outcome.error.toJSON())}\n`);
  return 1;
}

/** Waits (bounded) until every upstream server has listed its tools once. */
export async function discovered(integrations: IntegrationsService, timeoutMs = 15_000): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([
    integrations.discovered(),
    new Promise<void>((r) => {
      timer = setTimeout(r, timeoutMs);
    }),
  ]);
  clearTimeout(timer);
}

async function toolsList(p: Paddock, json: boolean, io: ActIo): Promise<number> {
  await discovered(p.integrations);
  printToolRows(toolRows(p), json, io);
  return 0;
}

async function servers(p: Paddock, act: Extract<CliAct, { command: 'servers' }>, io: ActIo): Promise<number> {
  switch (act.sub) {
    case 'list': {
      await discovered(p.integrations);
      const r = serversList(p.integrations);
      line(io, 'stdout', act.json ? JSON.stringify(r.data, null, 2) : r.text);
      return 0;
    }
    case 'tools': {
      const r = await serverTools(p.integrations, act.name);
      line(io, 'stdout', act.json ? JSON.stringify(r.data, null, 2) : r.text);
      return 0;
    }
    case 'logs':
      await serverTools(p.integrations, act.name).catch(() => {});
      line(io, 'stdout', serverLogs(p.integrations, act.name).text);
      return 0;
    case 'review': {
      // the review compares the server's current list with its pins: list it when unknown
      await serverTools(p.integrations, act.name).catch(() => {});
      const r = act.decision
        ? await decideReview(p.integrations, act.name, act.decision, 'cli', act.tools)
        : serverReview(p.integrations, act.name);
      line(io, 'stdout', act.json ? JSON.stringify(r.data, null, 2) : r.text);
      return 0;
    }
    case 'call': {
      if (!p.registry.get(act.name)) await discovered(p.integrations);
      const outcome = await p.gateway.call(act.name, act.input ?? {}, cliCaller());
      if (!outcome.ok) {
        line(io, 'stderr', renderError(outcome.error));
        return 1;
      }
      line(io, 'stdout', renderToolResult(outcome.result));
      return outcome.result.isError ? 1 : 0;
    }
  }
}

async function agents(
  p: Paddock,
  act: Extract<CliAct, { command: 'agents' }>,
  io: ActIo,
  signal: AbortSignal,
): Promise<number> {
  const service = p.agents;
  switch (act.sub) {
    case 'list': {
      const list = await service.list();
      const errors = service.loadErrors();
      line(
        io,
        'stdout',
        act.json ? JSON.stringify({ agents: list, errors }, null, 2) : formatAgentList(list, errors),
      );
      return errors.length > 0 ? 1 : 0;
    }
    case 'run': {
      const run = await service.run(act.arg ?? '', {
        ...(act.input !== undefined ? { input: act.input } : {}),
        trigger: 'manual',
        signal,
      });
      if (act.json) line(io, 'stdout', JSON.stringify(run, null, 2));
      else {
        line(io, 'stderr', formatRunRow(run));
        if (run.error) line(io, 'stderr', `error (${run.errorCode ?? 'UNKNOWN'}): ${run.error}`);
        for (const d of run.deliveries)
          if (!d.ok) line(io, 'stderr', `notify ${d.channel} failed: ${d.error ?? ''}`);
        if (run.finalAnswer) line(io, 'stdout', run.finalAnswer);
      }
      return run.status === 'succeeded' ? 0 : 1;
    }
    case 'runs': {
      const runs = await service.runs({ ...(act.arg ? { agent: act.arg } : {}), limit: act.limit });
      if (act.json) line(io, 'stdout', JSON.stringify(runs, null, 2));
      else line(io, 'stdout', runs.length ? runs.map(formatRunRow).join('\n') : 'No runs yet.');
      return 0;
    }
    case 'show': {
      const details = await service.show(act.arg ?? '');
      if (!details) {
        line(
          io,
          'stderr',
          `paddock agents: there is no run "${act.arg}"; list runs with \`paddock agents runs\`.`,
        );
        return 1;
      }
      line(io, 'stdout', act.json ? JSON.stringify(details, null, 2) : formatRunDetails(details));
      return 0;
    }
  }
}

/** Boots the link's computer (the `cli` caller's) and follows its startup job until it ends (or Ctrl-C). */
async function launch(p: Paddock, linkId: string, json: boolean, io: ActIo, signal: AbortSignal) {
  const computer = p.computer.for(cliCaller());
  const boot = await computer.bootLaunchLink(linkId);
  if (boot.bootError) {
    io.write('stderr', `paddock launch: the computer did not boot: ${boot.bootError}\n`);
    return 1;
  }
  if (json) line(io, 'stdout', JSON.stringify(boot, null, 2));
  else line(io, 'stdout', `Booted ${boot.launch.profileId} as generation ${boot.launch.generation}.`);
  if (!boot.jobId) return 0;
  let cursor: string | undefined;
  while (!signal.aborted) {
    const r = computer.readJob(boot.jobId, cursor, 65_536);
    if (r.stdout) io.write('stdout', r.stdout);
    if (r.stderr) io.write('stderr', r.stderr);
    cursor = r.nextCursor;
    if (r.terminationObserved && !r.stdout && !r.stderr) return r.exitCode === 0 ? 0 : 1;
    if (!r.stdout && !r.stderr) await sleep(100, signal);
  }
  return 130;
}

/** The server's side of the socket's `cli` operation: checks the request, then performs it. */
export function runActRequest(
  p: Paddock,
  request: Record<string, unknown>,
  io: ActIo,
  signal: AbortSignal,
): Promise<number> {
  const parsed = CliActSchema.safeParse(request);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new PaddockError(
      'INVALID_ARGUMENT',
      `The server cannot run this command (${issue ? `${issue.path.join('.')}: ${issue.message}` : 'bad request'}); use the paddock of the same installation as the server.`,
    );
  }
  return performAct(p, parsed.data, io, signal);
}
