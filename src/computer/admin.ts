/**
 * `paddock computers list | stop NAME | rm NAME` (and the checkpoint commands of
 * checkpoint-admin.ts), answered by the server that owns the computers (over its socket). The listing joins the computers the server holds with the kept
 * workspaces on disk, so a named computer whose workspace outlived a restart is listed too.
 */
import { PaddockError } from '../shared/errors.js';
import type { Gateway } from '../tools/gateway.js';
import { answerCheckpointRequest, isCheckpointAction } from './checkpoint-admin.js';
import { listKeptWorkspaces, removeKeptWorkspace } from './kept-workspaces.js';
import type { ComputerService } from './service.js';

/** One row of `paddock computers list`. */
export interface ComputerRow {
  [key: string]: unknown;
  name: string;
  running: boolean;
  lifecycle: string;
  profileId: string | null;
  generation: number | null;
  idleMs: number | null;
  workspace: 'keep' | 'fresh';
  /** Bytes of the kept workspace on disk; null for a fresh one (it goes with its generation). */
  diskBytes: number | null;
}

/** The listing from what is on disk alone (no server runs). */
export function computersOnDisk(dataDir: string): ComputerRow[] {
  return listKeptWorkspaces(dataDir).map((w) => ({
    name: w.key,
    running: false,
    lifecycle: 'stopped',
    profileId: null,
    generation: null,
    idleMs: null,
    workspace: 'keep',
    diskBytes: w.bytes,
  }));
}

/** Answers one request of `paddock computers`; throws PaddockError for a bad one. */
export async function answerComputersRequest(
  service: ComputerService,
  dataDir: string,
  request: Record<string, unknown>,
  gateway: Gateway | null = null,
): Promise<Record<string, unknown>> {
  const action = request.action;
  if (action === 'list') {
    const onDisk = new Map(computersOnDisk(dataDir).map((r) => [r.name, r]));
    const rows: ComputerRow[] = service.list().map((c) => ({
      name: c.name,
      running: c.lifecycle === 'running' || c.lifecycle === 'booting',
      lifecycle: c.lifecycle,
      profileId: c.profileId,
      generation: c.generation,
      idleMs: c.idleMs,
      workspace: c.workspace,
      diskBytes: onDisk.get(c.name)?.diskBytes ?? null,
    }));
    for (const [name, row] of onDisk) if (!rows.some((r) => r.name === name)) rows.push(row);
    return { computers: rows };
  }
  const name = request.name;
  if (typeof name !== 'string' || name === '')
    throw new PaddockError(
      'INVALID_ARGUMENT',
      'Name the computer, e.g. `paddock computers stop review-box`.',
    );
  if (isCheckpointAction(action)) return answerCheckpointRequest(service, gateway, name, request);
  if (action === 'stop') {
    const stopped = await service.stopComputer(name);
    if (!stopped)
      throw new PaddockError('NOT_FOUND', `No running computer "${name}"; see \`paddock computers list\`.`);
    return { name, stopped: true };
  }
  if (action === 'rm') {
    const forgotten = await service.removeComputer(name);
    const key = service.keyOfName(name);
    const freed = key.startsWith('named:') ? removeKeptWorkspace(dataDir, key.slice('named:'.length)) : null;
    if (!forgotten && freed === null)
      throw new PaddockError('NOT_FOUND', `No computer "${name}" here; see \`paddock computers list\`.`);
    return { name, removed: true, freedBytes: freed ?? 0 };
  }
  throw new PaddockError(
    'INVALID_ARGUMENT',
    'The action must be list, stop, rm, checkpoints, restore, fork or prune.',
  );
}
