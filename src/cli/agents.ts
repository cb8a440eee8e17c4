import { formatAgentList, formatRunDetails, formatRunRow } from '../agents/cli-format.js';
import type { AgentsService } from '../agents/service.js';
import { neutralizeControls } from '../shared/terminal-text.js';
import { parseCommandArgs, UsageError } from './args.js';
import { CONFIG_OPTION, withPaddock } from './context.js';

const HELP = `Usage:
  paddock agents list [--json]                           agents of .paddock/agents, their schedules and last runs
  paddock agents run <name> [--input TEXT] [--json]      run an agent now and print its final answer
  paddock agents runs [<name>] [--limit N] [--json]      recent runs, newest first
  paddock agents show <run> [--json]                     one run with every tool call it made (nested ones indented)

An agent is .paddock/agents/<name>/AGENT.md next to paddock.yaml; see docs/agents.md.
Scheduled runs happen while \`paddock serve\` runs. Ctrl-C during \`run\` cancels the run.
Exit codes: 0 success, 1 a failed/limited/cancelled run or agents that did not load, 2 usage or config errors.`;

/** Where the command writes (stdout and stderr by default). */
export interface CommandIo {
  out(text: string): void;
  err(text: string): void;
}

const stdio: CommandIo = {
  out: (text) => process.stdout.write(`${neutralizeControls(text)}\n`),
  err: (text) => process.stderr.write(`${neutralizeControls(text)}\n`),
};

/** `paddock agents …`; returns the exit code. */
export async function agentsCommand(args: string[]): Promise<number> {
  return runAgentsCommand(args, stdio);
}

/** {@link agentsCommand} with its output directed to `io` (for tests and embedding). */
export async function runAgentsCommand(args: string[], io: CommandIo): Promise<number> {
  const { values, positionals } = parseCommandArgs('agents', args, {
    ...CONFIG_OPTION,
    input: { type: 'string' },
    limit: { type: 'string' },
    json: { type: 'boolean' },
    help: { type: 'boolean', short: 'h' },
  });
  const [sub, arg, ...extra] = positionals;
  if (values.help || !sub) {
    io.out(HELP);
    return values.help ? 0 : 2;
  }
  if (extra.length > 0)
    throw new UsageError(`unexpected argument "${extra[0]}"; see \`paddock agents --help\`.`);
  if (!['list', 'run', 'runs', 'show'].includes(sub)) {
    throw new UsageError(`unknown subcommand "${sub}"; use list, run, runs or show.`);
  }
  if ((sub === 'run' || sub === 'show') && !arg) {
    throw new UsageError(`agents ${sub} needs ${sub === 'run' ? 'an agent name' : 'a run id'}.`);
  }
  if (values.input !== undefined && sub !== 'run')
    throw new UsageError('--input only applies to `agents run`.');
  const limit = values.limit === undefined ? 20 : Number(values.limit);
  if (!Number.isInteger(limit) || limit < 1 || limit > 1000)
    throw new UsageError('--limit must be an integer from 1 to 1000.');
  const json = values.json === true;

  return withPaddock(values, async (paddock) => {
    const agents = paddock.agents;
    switch (sub) {
      case 'list': {
        const list = agents.list();
        const errors = agents.loadErrors();
        io.out(json ? JSON.stringify({ agents: list, errors }, null, 2) : formatAgentList(list, errors));
        return errors.length > 0 ? 1 : 0;
      }
      case 'run':
        return await runOne(
          agents,
          arg!,
          typeof values.input === 'string' ? values.input : undefined,
          json,
          io,
        );
      case 'runs': {
        const runs = agents.runs({ ...(arg ? { agent: arg } : {}), limit });
        if (json) io.out(JSON.stringify(runs, null, 2));
        else io.out(runs.length ? runs.map(formatRunRow).join('\n') : 'No runs yet.');
        return 0;
      }
      default: {
        const details = agents.show(arg!);
        if (!details) {
          io.err(`paddock agents: there is no run "${arg}"; list runs with \`paddock agents runs\`.`);
          return 1;
        }
        io.out(json ? JSON.stringify(details, null, 2) : formatRunDetails(details));
        return 0;
      }
    }
  });
}

async function runOne(
  agents: AgentsService,
  name: string,
  input: string | undefined,
  json: boolean,
  io: CommandIo,
): Promise<number> {
  const controller = new AbortController();
  const onSignal = () => controller.abort();
  process.once('SIGINT', onSignal);
  try {
    const run = await agents.run(name, {
      ...(input !== undefined ? { input } : {}),
      trigger: 'manual',
      signal: controller.signal,
    });
    if (json) io.out(JSON.stringify(run, null, 2));
    else {
      io.err(formatRunRow(run));
      if (run.error) io.err(`error (${run.errorCode ?? 'UNKNOWN'}): ${run.error}`);
      for (const d of run.deliveries) if (!d.ok) io.err(`notify ${d.channel} failed: ${d.error ?? ''}`);
      if (run.finalAnswer) io.out(run.finalAnswer);
    }
    return run.status === 'succeeded' ? 0 : 1;
  } finally {
    process.removeListener('SIGINT', onSignal);
  }
}
