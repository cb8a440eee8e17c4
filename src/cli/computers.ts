/**
 * `paddock computers list | stop NAME | rm NAME`: the computers of the data directory's server,
 * with the disk their kept workspaces use (and their checkpoints: computers-checkpoints.ts). With a server running, it answers (it owns the
 * computers); without one, nothing runs and the kept workspaces on disk are all there is.
 */
import { locateConfig } from '../config/locate.js';
import { instancePaths } from '../mcp/instance.js';
import { knock } from '../mcp/socket-client.js';
import { sizeText } from '../shared/bytes-text.js';
import { PaddockError } from '../shared/errors.js';
import { out, parseCommandArgs } from './args.js';
import { checkpointCommand, isCheckpointCommand } from './computers-checkpoints.js';

const HELP = `Usage: paddock computers <command>

  list [--json]     every computer: name, profile, status, idle time, workspace kept or fresh,
                    and the disk a kept workspace uses (also those of computers not running)
  stop NAME         stop a running computer; its sessions get NOT_RUNNING until they launch again
  rm NAME           stop and forget a computer, and delete its kept workspace

  checkpoints NAME [--json]
                    the computer's checkpoints, newest first: id, time, what took it, files,
                    bytes it added to disk, and the call it was taken just before
  restore NAME ID   bring checkpoint ID back: the computer relaunches as a new generation (its
                    processes are killed); the state it leaves is checkpointed first, so the
                    answer names the checkpoint that undoes the restore
  fork NAME ID NEW  boot a new named computer NEW from checkpoint ID; NAME keeps running
  prune NAME --keep N | --all
                    drop all but the newest N checkpoints (--all: every one; a named computer
                    then boots with an empty /workspace), and free the disk only they used;
                    with neither, only collect what interrupted checkpoints left

NAME is a named computer (paddock mcp --computer NAME) or a name as the list shows it.
A restore and a fork are tool calls as the operator (caller cli): audited, under permissions.`;

const OPTIONS = {
  config: { type: 'string' as const },
  json: { type: 'boolean' as const },
  keep: { type: 'string' as const },
  all: { type: 'boolean' as const },
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
        `${r.name.padEnd(36)} ${(r.profileId ?? '-').padEnd(10)} ${r.lifecycle.padEnd(9)} ${idle(r.idleMs).padEnd(5)} ${r.workspace.padEnd(9)} ${sizeText(r.diskBytes)}`,
      );
    return 0;
  }
  if (isCheckpointCommand(sub)) return checkpointCommand(sub, positionals.slice(1), values, dataDir, ask);
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
  out(`Removed ${name}${freed ? ` (freed ${sizeText(freed)})` : ''}.`);
  return 0;
}
