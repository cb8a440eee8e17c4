/**
 * `paddock computers checkpoints | restore | fork | prune`, answered by the server that owns the
 * computers. A restore and a fork change a computer the way the tools do, so they are calls of
 * `restore_checkpoint` and `fork_computer` through the gateway as the operator at the CLI (caller
 * `cli`): permissions and policy apply, and each is an audit row, like `paddock tools call` and
 * the dock's own actions. Listing and pruning look after the store the way `paddock computers rm`
 * looks after a kept workspace: no tool does them, and a prune is written in the computer's log.
 */
import { PaddockError } from '../shared/errors.js';
import { OWNER } from '../shared/principal.js';
import type { Gateway } from '../tools/gateway.js';
import type { CallerContext } from '../tools/tool.js';
import type { CheckpointInfo } from './checkpoints/types.js';
import type { ComputerService } from './service.js';

/** How long a restore or a fork asked at the CLI may take (a restore first checkpoints the computer). */
const CLI_CALL_TIMEOUT_MS = 120_000;

/** The actions of this file. */
export const CHECKPOINT_ACTIONS = ['checkpoints', 'restore', 'fork', 'prune'] as const;

/** Whether `action` is one of {@link CHECKPOINT_ACTIONS}. */
export function isCheckpointAction(action: unknown): action is (typeof CHECKPOINT_ACTIONS)[number] {
  return (CHECKPOINT_ACTIONS as readonly unknown[]).includes(action);
}

/** Answers one checkpoint request of `paddock computers` about computer `name`. */
export async function answerCheckpointRequest(
  service: ComputerService,
  gateway: Gateway | null,
  name: string,
  request: Record<string, unknown>,
): Promise<Record<string, unknown>> {
  const action = request.action;
  if (action === 'checkpoints') return { name, checkpoints: await listOf(service, name) };
  if (action === 'prune') return prune(service, name, request);
  const id = request.id;
  if (typeof id !== 'string' || id === '')
    throw new PaddockError(
      'INVALID_ARGUMENT',
      `Name the checkpoint, e.g. \`paddock computers ${String(action)} ${name} ck_…\`; \`paddock computers checkpoints ${name}\` lists them.`,
    );
  if (!gateway)
    throw new PaddockError(
      'UNSUPPORTED_CAPABILITY',
      'This server has no tool gateway to restore or fork with.',
    );
  await listOf(service, name); // an unknown computer is NOT_FOUND before any call is made
  const caller: CallerContext = {
    caller: 'cli',
    principal: OWNER,
    via: 'direct',
    attended: true,
    computer: service.refOf(service.keyOfName(name)),
    deadline: Date.now() + CLI_CALL_TIMEOUT_MS,
  };
  if (action === 'restore') {
    const outcome = await gateway.call('restore_checkpoint', { checkpointId: id }, caller);
    return { name, ...answerOf(outcome, name, id) };
  }
  if (action === 'fork') {
    const to = request.to;
    if (typeof to !== 'string' || to === '')
      throw new PaddockError(
        'INVALID_ARGUMENT',
        `Name the new computer, e.g. \`paddock computers fork ${name} ${id} try-it\`.`,
      );
    const outcome = await gateway.call('fork_computer', { checkpointId: id, name: to }, caller);
    return answerOf(outcome, name, id);
  }
  throw new PaddockError('INVALID_ARGUMENT', 'The action must be checkpoints, restore, fork or prune.');
}

/** Computer `name`'s checkpoints, newest first; NOT_FOUND for a computer that neither runs nor has any. */
async function listOf(service: ComputerService, name: string): Promise<CheckpointInfo[]> {
  const { store, key, manager } = service.checkpointsOf(name);
  if (!store.has(key)) {
    if (manager) return [];
    throw new PaddockError(
      'NOT_FOUND',
      `No computer "${name}" here, and no checkpoints of one; see \`paddock computers list\`.`,
    );
  }
  return store.list(key);
}

/** A tool's answer, or the error it stands for in the words of the CLI. */
function answerOf(
  outcome: Awaited<ReturnType<Gateway['call']>>,
  name: string,
  id: string,
): Record<string, unknown> {
  if (!outcome.ok) {
    const e = outcome.error;
    if (e.code === 'NOT_FOUND' && (e.details as { checkpointId?: string } | undefined)?.checkpointId === id)
      throw new PaddockError(
        'NOT_FOUND',
        `Computer "${name}" has no checkpoint ${id}; \`paddock computers checkpoints ${name}\` lists the ones it has (retention removes the oldest).`,
      );
    if (e.code === 'NOT_RUNNING')
      throw new PaddockError(
        'NOT_RUNNING',
        `Computer "${name}" is not running, and a restore replaces a running computer; launch it first (a session attached with \`paddock mcp --computer ${name}\`), or boot the checkpoint as a new computer with \`paddock computers fork ${name} ${id} NEW\`.`,
      );
    throw e;
  }
  if (outcome.result.isError)
    throw new PaddockError('UPSTREAM_ERROR', 'The call reported an error; see `paddock audit` for details.');
  return outcome.result.structured ?? {};
}

/**
 * Drops every checkpoint of `name` but the newest `keep` (`all: true`: every one), then collects
 * the objects no remaining checkpoint uses. Without either it only collects.
 */
async function prune(
  service: ComputerService,
  name: string,
  request: Record<string, unknown>,
): Promise<Record<string, unknown>> {
  const { keep, all } = request;
  if (keep !== undefined && (typeof keep !== 'number' || !Number.isInteger(keep) || keep < 1))
    throw new PaddockError(
      'INVALID_ARGUMENT',
      `--keep takes a whole number of checkpoints of at least 1; to drop every checkpoint of ${name} say --all instead.`,
    );
  if (keep !== undefined && all === true)
    throw new PaddockError('INVALID_ARGUMENT', 'Say either --keep N or --all, not both.');
  await listOf(service, name);
  const { store, key, manager } = service.checkpointsOf(name);
  const kept = all === true ? 0 : typeof keep === 'number' ? keep : Number.POSITIVE_INFINITY;
  const { removed, gc } = await store.prune(key, kept);
  const freedBytes = gc.removedBytes;
  manager?.log.add(
    'info',
    'computer.checkpoint_prune',
    `The operator pruned the checkpoints (paddock computers prune): ${removed.length} removed, ${freedBytes} bytes freed.`,
  );
  if (removed.length > 0) manager?.checkpointsChanged(null);
  return {
    name,
    removed,
    freedBytes,
    keptBytes: gc.keptBytes,
    remaining: (await store.list(key)).length,
  };
}
