import { CONFIG_OPTION, out, parseCommandArgs, UsageError } from './args.js';
import { runAct } from './remote.js';

const HELP = `Usage: paddock launch <link-id> [--json]

Boots a computer from a launch link (created with the create_launch_link tool) and runs its
startup script as a job, printing the job's output. When a server runs for the data directory,
the computer boots in that server (the dock shows it) and stays after this command ends;
otherwise it lives as long as this command.`;

export async function launchCommand(args: string[]): Promise<number> {
  const { values, positionals } = parseCommandArgs('launch', args, {
    ...CONFIG_OPTION,
    json: { type: 'boolean' },
    help: { type: 'boolean', short: 'h' },
  });
  const [id] = positionals;
  if (values.help) {
    out(HELP);
    return 0;
  }
  if (!id)
    throw new UsageError('launch needs a link id: paddock launch <id> (the last part of /launch/<id>).');
  const linkId = id.replace(/^.*\/launch\//, '');
  return runAct(values, { command: 'launch', linkId, json: values.json === true });
}
