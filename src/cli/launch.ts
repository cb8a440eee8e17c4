import { sleep } from '../shared/abort.js';
import { out, parseCommandArgs, UsageError } from './args.js';
import { CONFIG_OPTION, withPaddock } from './context.js';

const HELP = `Usage: paddock launch <link-id> [--json]

Boots a computer from a launch link (created with the create_launch_link tool) and runs its
startup script as a job, printing the job's output. The computer lives as long as this
command; use the dock's /launch/<id> page to boot one in a running server.`;

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
  return withPaddock(values, async (p) => {
    const computer = p.computer.for({ caller: 'cli', via: 'direct', attended: true });
    const boot = await computer.bootLaunchLink(linkId);
    if (boot.bootError) {
      process.stderr.write(`paddock launch: the computer did not boot: ${boot.bootError}\n`);
      return 1;
    }
    if (values.json) out(JSON.stringify(boot, null, 2));
    else out(`Booted ${boot.launch.profileId} as generation ${boot.launch.generation}.`);
    if (!boot.jobId) return 0;
    let cursor: string | undefined;
    for (;;) {
      const r = computer.readJob(boot.jobId, cursor, 65_536);
      if (r.stdout) process.stdout.write(r.stdout);
      if (r.stderr) process.stderr.write(r.stderr);
      cursor = r.nextCursor;
      if (r.terminationObserved && !r.stdout && !r.stderr) return r.exitCode === 0 ? 0 : 1;
      if (!r.stdout && !r.stderr) await sleep(100);
    }
  });
}
