import { compilePolicy } from '../policy/compile.js';
import {
  createSystemHostResolver,
  decideAsEnforced,
  explainDecision,
  parsePolicyTarget,
} from '../policy/index.js';
import type { PolicyAction } from '../policy/types.js';
import { isPaddockError } from '../shared/errors.js';
import { CONFIG_OPTION, out, parseCommandArgs, UsageError } from './args.js';
import { loadFor } from './context.js';

const HELP = `Usage: paddock policy check <file.read|file.write|exec|http|tcp> <target> [--json] [--no-dns]

Examples:
  paddock policy check file.write /workspace/notes.md
  paddock policy check exec "git status"
  paddock policy check http https://api.github.com/repos
  paddock policy check tcp git.example.com:22
Prints allow, ask or deny and the rule that decided, exactly as http_get and a computer's
connections decide: for http and tcp the host is resolved (or taken from policy.http.hosts)
and its addresses vetted by the private-address guard, unless --no-dns. An http URL is what
a tool fetches (and, when it differs, what a computer's connection to that host and port
gets); tcp host:port is any connection of a computer (ask: a person may allow it while the
connection waits). Symlinks inside a computer are judged when a tool runs.
Exit code 0 = allow, 1 = deny or ask.`;

export async function policyCommand(args: string[]): Promise<number> {
  const { values, positionals } = parseCommandArgs('policy', args, {
    ...CONFIG_OPTION,
    json: { type: 'boolean' },
    'no-dns': { type: 'boolean' },
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
  let parsed: PolicyAction;
  try {
    parsed = parsePolicyTarget(action, target.join(' '));
  } catch (e) {
    if (isPaddockError(e)) throw new UsageError(e.message);
    throw e;
  }
  const dns = values['no-dns'] === true ? null : createSystemHostResolver();
  const decision = await decideAsEnforced(sandbox, parsed, dns);
  // a URL is also a computer's connection to its host and port: say so when that verdict differs
  const connection = connectionOf(parsed);
  const other = connection ? await decideAsEnforced(sandbox, connection, dns) : null;
  const differs = other !== null && (other.allow !== decision.allow || other.rule !== decision.rule);
  if (values.json) out(JSON.stringify(differs ? { ...decision, connection: other } : decision));
  else {
    out(explainDecision(decision));
    if (differs && connection?.type === 'tcp') {
      out(`a computer's connection to ${connection.host}:${connection.port}:`);
      out(explainDecision(other));
    }
  }
  return decision.allow ? 0 : 1;
}

/** The `tcp` action a computer's connection for an http URL is decided as (null for other actions). */
function connectionOf(action: PolicyAction): PolicyAction | null {
  if (action.type !== 'http') return null;
  try {
    const url = new URL(action.url);
    if (url.protocol !== 'http:' && url.protocol !== 'https:') return null;
    const port = Number(url.port || (url.protocol === 'https:' ? 443 : 80));
    return { type: 'tcp', host: url.hostname.replace(/^\[|\]$/g, ''), port };
  } catch {
    return null;
  }
}
