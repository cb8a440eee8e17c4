/**
 * `paddock computers list | stop NAME | rm NAME`: the computers of the data directory's server,
 * with the disk their kept workspaces use. With a server running, it answers (it owns the
 * computers); without one, nothing runs and the kept workspaces on disk are all there is.
 */
import { locateConfig } from '../config/locate.js';
import { instancePaths } from '../mcp/instance.js';
import { knock } from '../mcp/socket-client.js';
import { PaddockError } from '../shared/errors.js';
import { out, parseCommandArgs } from './args.js';

const HELP = `Usage: paddock computers <command>

  list [--json]     every computer: name, profile, status, idle time, workspace kept or fresh,
                    and the disk a kept workspace uses (also those of computers not running)
  stop NAME         stop a running computer; its sessions get NOT_RUNNING until they launch again
  rm NAME           stop and forget a computer, and delete its kept workspace

NAME is a named computer (paddock mcp --computer NAME) or a name as the list shows it.`;

const OPTIONS = {
  config: { type: 'string' as const },
  json: { type: 'boolean' as const },
  help: { type: 'boolean' as const, short: 'h' },
};

interface Row {
  name: string;
  running: boolean;
  lifecycle: string;
  profileId: string | null;
  idleMs: number | null;
  workspace: 'keep' | 'fresh';
  diskBytes: number | null;
}

function size(bytes: number | null): string {
  if (bytes === null) return '-';
  if (bytes < 1024) return `${bytes} B`;
  const units = ['KiB', 'MiB', 'GiB', 'TiB'];
  let v = bytes / 1024;
  let i = 0;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return `${v.toFixed(v < 10 ? 1 : 0)} ${units[i]}`;
}

function idle(ms: number | null): string {
  if (ms === null) return '-';
  const s = Math.round(ms / 1000);
  return s < 120 ? `${s}s` : s < 7200 ? `${Math.round(s / 60)}m` : `${Math.round(s / 3600)}h`;
}

/** Sends a request to the running server; undefined when none runs. */
async function ask(
  dataDir: string,
  request: Record<string, unknown>,
): Promise<Record<string, unknown> | undefined> {
  const result = await knock(instancePaths(dataDir), { op: 'computers', computers: request });
  if (result.kind !== 'answered') return undefined;
  result.socket.destroy();
  const reply = result.reply;
  if (!reply.ok) throw new PaddockError(reply.code as never, reply.message);
  return reply;
}

export async function computersCommand(args: string[]): Promise<number> {
  const { values, positionals } = parseCommandArgs('computers', args, OPTIONS);
  const [sub, name] = positionals;
  if (values.help || !sub) {
    out(HELP);
    return values.help ? 0 : 64;
  }
  const { dataDir } = locateConfig(typeof values.config === 'string' ? { configPath: values.config } : {});
  if (sub === 'list') {
    const reply = await ask(dataDir, { action: 'list' });
    const rows = (
      reply ? reply.computers : (await import('../computer/admin.js')).computersOnDisk(dataDir)
    ) as Row[];
    if (values.json) {
      out(JSON.stringify({ serverRunning: reply !== undefined, computers: rows }));
      return 0;
    }
    if (!reply) out(`No Paddock server runs for ${dataDir}: no computer is running.`);
    if (rows.length === 0) {
      out('No computers.');
      return 0;
    }
    out(
      `${'NAME'.padEnd(36)} ${'PROFILE'.padEnd(10)} ${'STATUS'.padEnd(9)} ${'IDLE'.padEnd(5)} ${'WORKSPACE'.padEnd(9)} DISK`,
    );
    for (const r of rows)
      out(
        `${r.name.padEnd(36)} ${(r.profileId ?? '-').padEnd(10)} ${r.lifecycle.padEnd(9)} ${idle(r.idleMs).padEnd(5)} ${r.workspace.padEnd(9)} ${size(r.diskBytes)}`,
      );
    return 0;
  }
  if ((sub !== 'stop' && sub !== 'rm') || !name) {
    out(HELP);
    return 64;
  }
  const reply = await ask(dataDir, { action: sub, name });
  if (sub === 'stop') {
    if (!reply)
      throw new PaddockError(
        'NOT_RUNNING',
        `No Paddock server runs for ${dataDir}, so no computer runs; nothing to stop.`,
      );
    out(`Stopped ${name}.`);
    return 0;
  }
  let freed = reply?.freedBytes as number | undefined;
  if (!reply) {
    const { removeKeptWorkspace } = await import('../computer/kept-workspaces.js');
    const bare = name.startsWith('named:') ? name.slice('named:'.length) : name;
    const bytes = removeKeptWorkspace(dataDir, bare);
    if (bytes === null)
      throw new PaddockError(
        'NOT_FOUND',
        `No kept workspace of "${name}" in ${dataDir}; see \`paddock computers list\`.`,
      );
    freed = bytes;
  }
  out(`Removed ${name}${freed ? ` (freed ${size(freed)})` : ''}.`);
  return 0;
}
