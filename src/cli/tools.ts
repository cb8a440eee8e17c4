import type { IntegrationsService } from '../integrations/service.js';
import { describeTool } from '../mcp/server.js';
import type { CallerContext } from '../tools/tool.js';
import { out, parseCommandArgs, parseJsonArg, UsageError } from './args.js';
import { CONFIG_OPTION, withPaddock } from './context.js';

const HELP = `Usage:
  paddock tools list [--json]
  paddock tools call NAME 'JSON' [--timeout-ms N]     (JSON may be - to read it from stdin)

Calls go through the same gateway as every other caller (permission, validation,
policy, audit) with caller "cli".`;

/** The CLI's caller context: a person at a terminal, so `ask` tools are allowed. */
export function cliCaller(timeoutMs?: number): CallerContext {
  return {
    caller: 'cli',
    via: 'direct',
    attended: true,
    ...(timeoutMs ? { deadline: Date.now() + timeoutMs } : {}),
  };
}

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
  if (sub === 'list') {
    return withPaddock(values, async (p) => {
      await discovered(p.integrations);
      const tools = p.gateway.listTools(cliCaller());
      if (values.json)
        out(
          JSON.stringify(
            tools.map((t) => ({
              ...describeTool(t),
              source: t.source,
              toolsets: t.toolsets,
              permission: p.gateway.permissionOf(t),
            })),
            null,
            2,
          ),
        );
      else
        for (const t of tools)
          out(
            `${t.name.padEnd(28)} ${t.source.padEnd(14)} ${p.gateway.permissionOf(t).padEnd(5)} ${firstSentence(t.description)}`,
          );
      return 0;
    });
  }
  if (sub === 'call') {
    if (!name) throw new UsageError('tools call needs a tool name: paddock tools call NAME \'{"arg":1}\'');
    const text = input === '-' ? await readStdin() : (input ?? '{}');
    const args = parseJsonArg(text, 'The tool arguments');
    const timeoutMs = values['timeout-ms'] ? Number(values['timeout-ms']) : undefined;
    if (timeoutMs !== undefined && !(timeoutMs > 0))
      throw new UsageError('--timeout-ms must be a positive number of milliseconds.');
    return withPaddock(values, async (p) => {
      if (!p.registry.get(name)) await discovered(p.integrations);
      const outcome = await p.gateway.call(name, args, cliCaller(timeoutMs));
      if (outcome.ok) {
        const r = outcome.result;
        out(JSON.stringify(r.structured ?? r.content ?? {}, null, 2));
        return r.isError ? 1 : 0;
      }
      process.stderr.write(`${JSON.stringify(outcome.error.toJSON())}\n`);
      return 1;
    });
  }
  throw new UsageError(`unknown subcommand "${sub}"; use list or call.`);
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

function firstSentence(text: string): string {
  const s = text.split(/(?<=\.)\s/)[0] ?? text;
  return s.length > 90 ? `${s.slice(0, 87)}...` : s;
}

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}
