/**
 * The host directory a sandbox shows as /workspace: fresh per generation, or a kept one that
 * outlives generations. A kept workspace is never removed by a backend, nor is its parent; only
 * a generation's own directory is.
 */
import { chownSync, existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { PaddockError } from '../../shared/errors.js';
import { sandboxName } from './bwrap-args.js';
import type { IdMap } from './id-map.js';
import type { SandboxSpec } from './types.js';

/** Gives the launch a mount namespace of its own (to bind a kept workspace as root). */
const UNSHARE = '/usr/bin/unshare';

/** Where /workspace comes from for one launch. */
export interface PreparedWorkspace {
  /** The directory bwrap binds as /workspace. */
  workspace: string;
  /** The kept workspace, when there is one. */
  kept: string | null;
  /** This generation's own directory, removed with it (never a kept workspace or its parent). */
  removeOnDestroy: string | null;
}

/**
 * Prepares /workspace. As a dedicated uid the sandbox cannot reach the data directory, so a
 * fresh workspace then lives in the server's traversable sandbox root, and a kept one is bound
 * (in a mount namespace of the launch only) onto an empty directory there.
 */
export function prepareWorkspace(
  spec: SandboxSpec,
  runAs: IdMap | null,
  sandboxRoot: () => string,
): PreparedWorkspace {
  const kept = spec.keptWorkspace ?? null;
  if (kept) {
    if (!existsSync(kept)) {
      throw new PaddockError(
        'NOT_FOUND',
        `The kept workspace ${kept} is gone; restore the directory, or set the computer's workspace to fresh and launch again.`,
      );
    }
    if (runAs) chownSync(kept, runAs.jobHostId, runAs.jobHostId);
  }
  if (!runAs) {
    if (kept) return { workspace: kept, kept, removeOnDestroy: null };
    const dir = join(spec.hostDir, 'workspace');
    mkdirSync(dir, { recursive: true, mode: 0o755 });
    return { workspace: dir, kept: null, removeOnDestroy: null };
  }
  const generationDir = join(sandboxRoot(), sandboxName(spec));
  mkdirSync(generationDir, { mode: 0o711 });
  const dir = join(generationDir, 'workspace');
  mkdirSync(dir, { mode: 0o755 });
  chownSync(dir, runAs.jobHostId, runAs.jobHostId);
  return { workspace: dir, kept, removeOnDestroy: generationDir };
}

/**
 * The launch prefix that binds a kept workspace onto the generation's directory as root, in a
 * mount namespace of the launch only: the host's mount table never changes.
 */
export function workspaceBindPrefix(bind: { source: string; target: string }): string[] {
  return [
    UNSHARE,
    '--mount',
    '--propagation',
    'private',
    '--',
    '/bin/sh',
    '-c',
    'mount --bind "$1" "$2" || exit 124; shift 2; exec "$@"',
    'paddock-workspace',
    bind.source,
    bind.target,
  ];
}
