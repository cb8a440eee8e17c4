/**
 * What a computer does with its checkpoints (the store is checkpoints/store.ts): take one of the
 * running generation, restore one as a new generation, fork one into another named computer,
 * and the automatic ones (before a call a person approved, before a restore, when a named
 * computer stops, optionally before every run_command). A named computer booting again from its
 * latest checkpoint is comeback.ts.
 */
import { existsSync } from 'node:fs';
import { PaddockError } from '../shared/errors.js';
import { assertRootFits, rootSeedOf } from './checkpoints/root-seed.js';
import type { CheckpointStore } from './checkpoints/store.js';
import type { CheckpointInfo, CheckpointOrigin, CheckpointTrigger } from './checkpoints/types.js';
import type { Generation } from './generation/generation.js';
import type { ComputerManager, LaunchResult } from './manager.js';

/** How long a checkpoint taken on the way to a stop may hold the stop up. */
const STOP_CHECKPOINT_TIMEOUT_MS = 60_000;

/** What a manager lends its checkpoint actions. */
export interface CheckpointHost {
  readonly name: string;
  readonly log: ComputerManager['log'];
  readonly checkpoints: { store: CheckpointStore; key: string };
  /** The current generation, if any. */
  readonly computer: Generation | null;
  requireRunning(signal?: AbortSignal): Promise<Generation>;
  workspaceKept(profileId: string): boolean;
  launch: ComputerManager['launch'];
  /** Tells the computer's subscribers its checkpoints changed (a `checkpoint` event). */
  checkpointsChanged?(checkpointId: string | null): void;
}

/** Options of one checkpoint. */
export interface TakeOptions {
  label?: string;
  trigger: CheckpointTrigger;
  before?: CheckpointOrigin['before'];
  /** Checkpoint ids retention must not drop in this step. */
  keep?: string[];
  signal?: AbortSignal;
}

/** Whether generation `c` has a /workspace the server can checkpoint (a server computer, booted). */
export function checkpointable(c: Generation): boolean {
  return c.profile.backend !== 'browser' && existsSync(c.hostWorkspace);
}

/** Takes a checkpoint of generation `c` of computer `host`. UNSUPPORTED_CAPABILITY for a browser computer. */
export async function takeCheckpoint(
  host: CheckpointHost,
  c: Generation,
  o: TakeOptions,
): Promise<CheckpointInfo> {
  if (!checkpointable(c)) {
    throw new PaddockError(
      'UNSUPPORTED_CAPABILITY',
      'This computer has no /workspace the server can checkpoint (browser computers keep their files in the tab); launch a server profile for checkpoints.',
    );
  }
  const { store, key } = host.checkpoints;
  const info = await store.create(key, c.hostWorkspace, {
    ...(o.label ? { label: o.label } : {}),
    ...(o.keep ? { keep: o.keep } : {}),
    ...(o.signal ? { signal: o.signal } : {}),
    // on an image, the writable root layer too (null without one)
    rootLayer: c.rootLayer,
    // the computer's processes are frozen for the walk: a point in time, mmap writes included
    ...(c.instance?.pause ? { pause: () => c.instance?.pause?.() ?? Promise.resolve(null) } : {}),
    origin: {
      trigger: o.trigger,
      profileId: c.profile.id,
      generation: c.generation,
      ...(o.before ? { before: o.before } : {}),
    },
  });
  host.log.add(
    'info',
    'computer.checkpoint',
    `Checkpoint ${info.id} taken of ${info.layers.includes('root') ? '/workspace and the root layer' : '/workspace'} (${info.files} files, ${o.trigger}${o.before ? ` before ${o.before.tool} ${o.before.invocationId}` : ''}).`,
    { generation: c.generation },
  );
  host.checkpointsChanged?.(info.id);
  return info;
}

/** The answer of a restore. */
export interface RestoreResult extends LaunchResult {
  checkpointId: string;
  savedAs: string;
}

/**
 * Restores checkpoint `id` of `host`: the state it leaves is checkpointed first (so the restore
 * is undone by restoring `savedAs`), then the computer relaunches as a new generation whose
 * /workspace is the checkpoint's.
 */
export async function restoreCheckpoint(
  host: CheckpointHost,
  id: string,
  signal?: AbortSignal,
): Promise<RestoreResult> {
  const { store, key } = host.checkpoints;
  const target = await store.get(key, id);
  const c = await host.requireRunning(signal);
  if (host.workspaceKept(c.profile.id)) {
    throw new PaddockError(
      'UNSUPPORTED_CAPABILITY',
      'This computer keeps its /workspace on its own disk across launches, and a checkpoint is not restored into a kept workspace yet; fork_computer the checkpoint into a new named computer instead.',
    );
  }
  // a root layer made over another image is refused before anything is saved
  assertRootFits(target, c.rootLayer?.image ?? null);
  const saved = await takeCheckpoint(host, c, {
    label: `before restoring ${target.id}`,
    trigger: 'restore',
    keep: [target.id],
    ...(signal ? { signal } : {}),
  });
  const launched = host.launch(c.profile.id, undefined, {
    seedWorkspace: (dir) => store.restore(key, target.id, dir),
    seedRoot: rootSeedOf(store, key, target),
  });
  host.log.add(
    'info',
    'computer.restore',
    `Restoring checkpoint ${target.id}; the state left was saved as ${saved.id}.`,
    { generation: launched.generation },
  );
  return { ...launched, checkpointId: target.id, savedAs: saved.id };
}

/** The answer of a fork. */
export interface ForkResult extends LaunchResult {
  /** The new computer's name (what a session names in its Paddock-Computer header). */
  name: string;
  checkpointId: string;
  from: string;
}

/**
 * Boots named computer `to` (which must not be running) with the /workspace of checkpoint `id`
 * of `from`, on the profile that checkpoint was taken of unless `profileId` says otherwise. The
 * origin is not touched: it keeps running.
 */
export async function forkCheckpoint(
  from: CheckpointHost,
  to: CheckpointHost,
  id: string,
  profileId?: string,
): Promise<ForkResult> {
  const source = from.checkpoints;
  const manifest = await source.store.get(source.key, id);
  if (to.name === from.name) {
    throw new PaddockError(
      'INVALID_ARGUMENT',
      'A fork needs a new name; to bring this computer back to the checkpoint, call restore_checkpoint.',
    );
  }
  const target = to.computer;
  if (target && (target.lifecycle === 'running' || target.lifecycle === 'booting')) {
    throw new PaddockError(
      'FILE_EXISTS',
      `Computer "${to.name.replace(/^named:/, '')}" is already running; pick another name for the fork, or stop that one first (paddock computers stop).`,
    );
  }
  const profile = profileId ?? manifest.origin?.profileId;
  if (!profile) {
    throw new PaddockError(
      'INVALID_ARGUMENT',
      'This checkpoint does not say which profile it was taken of; pass profileId (see list_profiles).',
    );
  }
  if (to.workspaceKept(profile)) {
    throw new PaddockError(
      'UNSUPPORTED_CAPABILITY',
      `Computer "${to.name.replace(/^named:/, '')}" keeps its /workspace on its own disk, and a fork is not written into a kept workspace yet; fork into a name without computer.named.<name>.workspace: keep.`,
    );
  }
  // a root layer comes along; the launch refuses it over another image than it was made over
  const launched = to.launch(profile, undefined, {
    seedWorkspace: (dir) => source.store.restore(source.key, id, dir),
    seedRoot: rootSeedOf(source.store, source.key, manifest),
  });
  to.log.add('info', 'computer.fork', `Forked from checkpoint ${id} of ${from.name}.`, {
    generation: launched.generation,
  });
  from.log.add('info', 'computer.fork', `Checkpoint ${id} was forked into ${to.name}.`);
  return { ...launched, name: to.name.replace(/^named:/, ''), checkpointId: id, from: from.name };
}

/**
 * A named computer on its way to a stop: its files are checkpointed (trigger `stop`), so its next
 * boot finds them. Never throws and never holds the stop up longer than a minute; a failure is
 * logged.
 */
export async function checkpointOnStop(host: CheckpointHost, c: Generation | null): Promise<void> {
  if (!host.name.startsWith('named:') || !c || c.lifecycle !== 'running' || !checkpointable(c)) return;
  if (host.workspaceKept(c.profile.id)) return; // its own disk outlives the stop already
  try {
    await takeCheckpoint(host, c, {
      label: 'when it stopped',
      trigger: 'stop',
      signal: AbortSignal.timeout(STOP_CHECKPOINT_TIMEOUT_MS),
    });
  } catch (e) {
    host.log.add(
      'err',
      'computer.checkpoint',
      `The checkpoint taken as the computer stopped failed: ${(e as Error).message}. Its earlier checkpoints are intact.`,
      { generation: c.generation },
    );
  }
}

/**
 * Checkpoints `host`'s running computer just before a call (`trigger` approval or run_command),
 * naming that call's audit row; null when no server computer runs (nothing to keep). One call
 * gets one checkpoint: an approved run_command the gateway checkpointed already is not taken again.
 */
export async function checkpointBeforeCall(
  host: CheckpointHost,
  trigger: 'approval' | 'run_command',
  before: { invocationId: string; tool: string; approvalId: string | null },
  signal?: AbortSignal,
): Promise<CheckpointInfo | null> {
  const c = host.computer;
  if (c?.lifecycle !== 'running' || c.profile.backend === 'browser') return null;
  const { store, key } = host.checkpoints;
  const latest = store.latest(key);
  if (latest?.before?.invocationId === before.invocationId) return latest;
  return takeCheckpoint(host, c, {
    trigger,
    before,
    label: `before ${before.tool}`,
    ...(signal ? { signal } : {}),
  });
}
