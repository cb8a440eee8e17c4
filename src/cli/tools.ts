import { CONFIG_OPTION, out, parseCommandArgs, parseJsonArg, UsageError } from './args.js';
import { runAct } from './remote.js';

const HELP = `Usage:
  paddock tools list [--json]
  paddock tools call NAME 'JSON' [--timeout-ms N]     (JSON may be - to read it from stdin)

Calls go through the same gateway as every other caller (permission, validation,
policy, audit) with caller "cli". When a server runs for the data directory, the call
runs inside it (its computers, its upstream servers); otherwise in this command alone.`;

export async function toolsCommand(args: string[]): Promise<number> {
  const { values, positionals } = parseCommandArgs('tools', args, {
    ...CONFIG_OPTION,
    json: { type: 'boolean' },
    help: { type: 'boolean', short: 'h' },
    'timeout-ms': { type: 'string' },
  });
  const [sub, name, input] = positionals;
  if (values.help || !sub) {
    out(HELP);
    return values.help ? 0 : 2;
  }
  if (sub === 'list') return runAct(values, { command: 'tools.list', json: values.json === true });
  if (sub === 'call') {
    if (!name) throw new UsageError('tools call needs a tool name: paddock tools call NAME \'{"arg":1}\'');
    const text = input === '-' ? await readStdin() : (input ?? '{}');
    const args = parseJsonArg(text, 'The tool arguments');
    const timeoutMs = values['timeout-ms'] ? Number(values['timeout-ms']) : undefined;
    if (timeoutMs !== undefined && !(timeoutMs > 0))
      throw new UsageError('--timeout-ms must be a positive number of milliseconds.');
    // Ctrl-C ends the wait and cancels a job the call started (the act says which)
    return runAct(
      values,
      { command: 'tools.call', name, input: args, ...(timeoutMs !== undefined ? { timeoutMs } : {}) },
      { cancellable: true },
    );
  }
  throw new UsageError(`unknown subcommand "${sub}"; use list or call.`);
}

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}
