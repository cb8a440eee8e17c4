import { neutralizeControls } from '../shared/terminal-text.js';
import { CONFIG_OPTION, parseCommandArgs, UsageError } from './args.js';
import { runAct } from './remote.js';

const HELP = `Usage:
  paddock agents list [--json]                           agents of .paddock/agents, their schedules and last runs
  paddock agents run <name> [--input TEXT] [--json]      run an agent now and print its final answer
  paddock agents runs [<name>] [--limit N] [--json]      recent runs, newest first
  paddock agents show <run> [--json]                     one run with every tool call it made (nested ones indented)

An agent is .paddock/agents/<name>/AGENT.md next to paddock.yaml; see docs/agents.md.
Scheduled runs happen while \`paddock serve\` runs; while it runs, \`run\` runs the agent inside it.
Ctrl-C during \`run\` cancels the run.
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

  const act = {
    command: 'agents' as const,
    sub: sub as 'list' | 'run' | 'runs' | 'show',
    ...(arg !== undefined ? { arg } : {}),
    ...(typeof values.input === 'string' ? { input: values.input } : {}),
    limit,
    json,
  };
  return runAct(values, act, {
    cancellable: sub === 'run',
    io: { write: (stream, text) => (stream === 'stdout' ? io.out : io.err)(text.replace(/\n$/, '')) },
  });
}
