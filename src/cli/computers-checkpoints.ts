/**
 * `paddock computers checkpoints NAME | restore NAME ID | fork NAME ID NEW | prune NAME`: a
 * computer's checkpoints for the operator. The running server answers (computer/checkpoint-admin.ts);
 * without one, a named computer's checkpoints are still listed and pruned from the data directory,
 * and a restore or a fork says to start the server first.
 */
import { CheckpointStore } from '../computer/checkpoints/store.js';
import type { CheckpointInfo } from '../computer/checkpoints/types.js';
import { sizeText } from '../shared/bytes-text.js';
import { PaddockError } from '../shared/errors.js';
import { neutralizeControls } from '../shared/terminal-text.js';
import { out, UsageError } from './args.js';

const COMMANDS = ['checkpoints', 'restore', 'fork', 'prune'] as const;
type CheckpointCommand = (typeof COMMANDS)[number];

/** Whether `sub` is a checkpoint command of `paddock computers`. */
export function isCheckpointCommand(sub: string): sub is CheckpointCommand {
  return (COMMANDS as readonly string[]).includes(sub);
}

/** Sends one request to the running server; undefined when none runs. */
type Ask = (
  dataDir: string,
  request: Record<string, unknown>,
) => Promise<Record<string, unknown> | undefined>;

/** Runs one checkpoint command; `args` are the positionals after the command's name. */
export async function checkpointCommand(
  sub: CheckpointCommand,
  args: string[],
  values: Record<string, unknown>,
  dataDir: string,
  ask: Ask,
): Promise<number> {
  const [name, id, to] = args;
  const usage = {
    checkpoints: 'paddock computers checkpoints NAME [--json]',
    restore: 'paddock computers restore NAME ID',
    fork: 'paddock computers fork NAME ID NEW',
    prune: 'paddock computers prune NAME [--keep N | --all]',
  }[sub];
  const wanted = { checkpoints: 1, prune: 1, restore: 2, fork: 3 }[sub];
  if (args.length !== wanted || !name) throw new UsageError(`Usage: ${usage}`);
  const json = values.json === true;
  if (sub === 'checkpoints') {
    const reply = await ask(dataDir, { action: 'checkpoints', name });
    const list =
      (reply?.checkpoints as CheckpointInfo[] | undefined) ?? (await offline(dataDir, name).list());
    if (json) out(JSON.stringify({ name, serverRunning: reply !== undefined, checkpoints: list }));
    else printTable(name, list);
    return 0;
  }
  if (sub === 'prune') {
    const keep = pruneKeep(values);
    const request = { action: 'prune', name, ...keep };
    const reply = (await ask(dataDir, request)) ?? (await pruneOffline(dataDir, name, keep));
    if (json) out(JSON.stringify(reply));
    else
      out(
        `Pruned ${name}: ${(reply.removed as string[]).length} checkpoint(s) removed, ${sizeText(reply.freedBytes as number)} freed; ${String(reply.remaining)} left, holding ${sizeText(reply.keptBytes as number)}.`,
      );
    return 0;
  }
  const reply = await ask(dataDir, { action: sub, name, id, ...(to ? { to } : {}) });
  if (!reply)
    throw new PaddockError(
      'NOT_RUNNING',
      `No Paddock server runs for ${dataDir}, so no computer can be ${sub === 'restore' ? 'restored' : 'forked'}; start it with \`paddock serve\` and run this again.`,
    );
  if (json) out(JSON.stringify(reply));
  else if (sub === 'restore')
    out(
      `Restoring ${name} to checkpoint ${String(reply.checkpointId)}: generation ${String(reply.generation)} boots with its /workspace. ` +
        `The state it left is checkpoint ${String(reply.savedAs)}; \`paddock computers restore ${name} ${String(reply.savedAs)}\` undoes this.`,
    );
  else
    out(
      `Forked checkpoint ${String(reply.checkpointId)} of ${name} into ${String(reply.name)}: generation ${String(reply.generation)} boots. ` +
        `Attach to it with \`paddock mcp --computer ${String(reply.name)}\`.`,
    );
  return 0;
}

/** `--keep N` / `--all` as the request carries them. */
function pruneKeep(values: Record<string, unknown>): { keep?: number; all?: true } {
  const keep = values.keep;
  if (keep !== undefined) {
    const n = Number(keep);
    if (!/^\d+$/.test(String(keep)) || n < 1)
      throw new UsageError(
        '--keep takes a whole number of at least 1; to drop every checkpoint say --all instead.',
      );
    if (values.all === true) throw new UsageError('Say either --keep N or --all, not both.');
    return { keep: n };
  }
  return values.all === true ? { all: true } : {};
}

/** One named computer's checkpoints, reached without a server. */
interface OfflineCheckpoints {
  list(): Promise<CheckpointInfo[]>;
  prune(keepNewest: number): ReturnType<CheckpointStore['prune']>;
}

/** The checkpoints of named computer `name` in `dataDir`, read without a server. */
function offline(dataDir: string, name: string): OfflineCheckpoints {
  const bare = name.startsWith('named:') ? name.slice('named:'.length) : name;
  if (name.startsWith('private:'))
    throw new PaddockError(
      'NOT_RUNNING',
      `No Paddock server runs for ${dataDir}, and the checkpoints of a private computer went with its session.`,
    );
  // retention applies when a checkpoint is taken, which never happens here
  const store = new CheckpointStore({ dataDir, retention: { maxCount: 1, maxBytes: 0 } });
  if (!store.has(bare))
    throw new PaddockError(
      'NOT_FOUND',
      `Computer "${name}" has no checkpoints in ${dataDir}; see \`paddock computers list\`.`,
    );
  return { list: () => store.list(bare), prune: (keep) => store.prune(bare, keep) };
}

async function pruneOffline(
  dataDir: string,
  name: string,
  keep: { keep?: number; all?: true },
): Promise<Record<string, unknown>> {
  const store = offline(dataDir, name);
  const { removed, gc } = await store.prune(keep.all ? 0 : (keep.keep ?? Number.POSITIVE_INFINITY));
  return {
    name,
    removed,
    freedBytes: gc.removedBytes,
    keptBytes: gc.keptBytes,
    remaining: (await store.list()).length,
  };
}

/** Local time, to the second. */
function when(iso: string): string {
  const d = new Date(iso);
  const p = (n: number) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())} ${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}`;
}

function cut(text: string, width: number): string {
  return text.length > width ? `${text.slice(0, width - 1)}…` : text;
}

function printTable(name: string, list: CheckpointInfo[]): void {
  if (list.length === 0) {
    out(`${name} has no checkpoints.`);
    return;
  }
  out(
    `${'ID'.padEnd(24)} ${'TAKEN'.padEnd(19)} ${'WHAT'.padEnd(34)} ${'FILES'.padStart(7)} ${'ADDED'.padStart(9)}  BEFORE THE CALL`,
  );
  for (const c of list) {
    // labels come from agents: no control sequence of theirs reaches the terminal
    const what = neutralizeControls(cut(c.label ? `${c.trigger}: ${c.label}` : c.trigger, 34));
    const before = c.before ? neutralizeControls(`${c.before.tool} ${c.before.invocationId}`) : '-';
    out(
      `${c.id.padEnd(24)} ${when(c.createdAt)} ${what.padEnd(34)} ${String(c.files).padStart(7)} ${sizeText(c.addedBytes).padStart(9)}  ${before}`,
    );
  }
}
