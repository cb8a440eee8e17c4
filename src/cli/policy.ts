import { compilePolicy } from '../policy/compile.js';
import { explainDecision, parsePolicyTarget } from '../policy/index.js';
import type { PolicyDecision } from '../policy/types.js';
import { isPaddockError } from '../shared/errors.js';
import { CONFIG_OPTION, out, parseCommandArgs, UsageError } from './args.js';
import { loadFor } from './context.js';

const HELP = `Usage: paddock policy check <file.read|file.write|exec|http> <target> [--json]

Examples:
  paddock policy check file.write /workspace/notes.md
  paddock policy check exec "git status"
  paddock policy check http https://api.github.com/repos
Prints allow or deny and the rule that decided (lexical check: symlinks inside a
computer and DNS answers are checked when a tool runs). Exit code 0 = allow, 1 = deny.`;

export async function policyCommand(args: string[]): Promise<number> {
  const { values, positionals } = parseCommandArgs('policy', args, {
    ...CONFIG_OPTION,
    json: { type: 'boolean' },
    help: { type: 'boolean', short: 'h' },
  });
  const [sub, action, ...target] = positionals;
  if (values.help || !sub) {
    out(HELP);
    return values.help ? 0 : 2;
  }
  if (sub !== 'check') throw new UsageError(`unknown subcommand "${sub}"; use check.`);
  if (!action || target.length === 0)
    throw new UsageError(
      'policy check needs an action and a target, e.g. `paddock policy check http https://example.com`.',
    );
  const loaded = await loadFor(values);
  const sandbox = compilePolicy(loaded);
  let decision: PolicyDecision;
  try {
    decision = sandbox.check(parsePolicyTarget(action, target.join(' ')));
  } catch (e) {
    if (isPaddockError(e)) throw new UsageError(e.message);
    throw e;
  }
  out(values.json ? JSON.stringify(decision) : explainDecision(decision));
  return decision.allow ? 0 : 1;
}
