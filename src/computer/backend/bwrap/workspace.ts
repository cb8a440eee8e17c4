/**
 * Where a computer's writable files live, and how its disk limit is enforced.
 *
 * - Paddock as root, with loop devices and ext4 (the normal case): a disk image of exactly
 *   the profile's `diskMb` holds /workspace (the jobs' home) and /tmp. A fresh computer's image
 *   is `<hostDir>/disk.img` (under the data directory, 0700) and goes with its generation; a
 *   kept one is `<keptDir>/disk.img` and outlives generations. The image is mounted only in
 *   the launch's own mount namespace (launch-namespace.ts).
 * - Paddock as root without them: plain directories in the same places, bound through the
 *   launch namespace; /tmp is a tmpfs of `diskMb`, the workspace has no limit.
 * - Paddock as an ordinary user: the same plain directories, bound directly.
 *
 * A kept directory is never removed by a backend, nor is its parent; only a generation's own is.
 */
import { chownSync, existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { PaddockError } from '../../../shared/errors.js';
import type { Logger } from '../../../shared/logger.js';
import { hostIdOf } from '../../images/ids.js';
import type { MountSpec, SandboxSpec } from '../types.js';
import { sandboxName } from './args.js';
import { type DiskSpares, type DiskSupport, prepareKeptImage } from './disk-image.js';
import type { IdMap } from './id-map.js';
import type { AnchorMount } from './launch-namespace.js';
import { copyOwned, reachableByAnyone } from './runtime-files.js';
import type { SandboxRoot } from './sandbox-root.js';

/** Whether the disk limit holds for everything a job can write, and how. */
export interface DiskQuota {
  enforced: boolean;
  /** How it is enforced, or why it is not (for status, logs and `paddock doctor`). */
  detail: string;
}

/** Where the writable places of one launch come from. */
export interface PreparedStorage {
  /** The path bwrap binds as /workspace. */
  workspace: string;
  /** The path bwrap binds as /tmp; null: a tmpfs of `diskMb`. */
  tmp: string | null;
  /** The path bwrap binds as / when the computer runs on an image (its overlay), else null. */
  root: string | null;
  /** The launch's own directory and what the launch namespace mounts on it (null: no namespace). */
  launch: { dir: string; mounts: AnchorMount[] } | null;
  /** The profile's mounts, read-only ones the sandbox uid cannot reach replaced by staged copies. */
  mounts: MountSpec[];
  /** /workspace as the host reaches it: a host path, or one only the launch namespace has. */
  hostWorkspace: { path: string; inLaunchNamespace: boolean };
  /** The overlay's upper directory, a path only the launch namespace has (null: no image). */
  rootLayer?: string | null;
  /** Removed with the generation: its own directories (never a kept directory). */
  removeOnDestroy: string[];
  quota: DiskQuota;
}

/** What the backend knows when it prepares a launch. */
export interface StorageContext {
  /** The sandbox accounts when Paddock runs as root, else null. */
  runAs: IdMap | null;
  /** The server's sandbox root (created on first use; only when `runAs`). */
  root: () => SandboxRoot;
  disk: DiskSupport;
  /** Blank disks made ahead for cold launches. */
  spares: DiskSpares;
  logger: Logger;
}

/** Prepares a launch's workspace, /tmp and staged mounts. */
export async function prepareStorage(spec: SandboxSpec, ctx: StorageContext): Promise<PreparedStorage> {
  const { runAs } = ctx;
  const kept = spec.keptDir ?? null;
  if (spec.image && (!runAs || !ctx.disk.ok))
    throw new PaddockError(
      'UNSUPPORTED_CAPABILITY',
      `A computer on an image needs Paddock to run as root with a disk per computer (${runAs ? (ctx.disk.ok ? '' : ctx.disk.reason) : 'Paddock does not run as root'}); use a profile without an image here.`,
    );
  if (spec.seedRoot && (!spec.image || kept))
    throw new PaddockError(
      'UNSUPPORTED_CAPABILITY',
      'A root layer can be restored only onto a fresh computer on an image; relaunch with a profile that has one and no kept workspace.',
    );
  if (kept) mkdirSync(kept, { recursive: true, mode: 0o700 });
  if (!runAs) {
    const dir = join(kept ?? spec.hostDir, 'workspace');
    mkdirSync(dir, { recursive: true, mode: 0o755 });
    return {
      workspace: dir,
      tmp: null,
      root: null,
      launch: null,
      mounts: spec.mounts,
      hostWorkspace: { path: dir, inLaunchNamespace: false },
      removeOnDestroy: [],
      quota: notEnforced(spec, 'Paddock does not run as root, so it cannot mount a disk per computer'),
    };
  }
  mkdirSync(spec.hostDir, { recursive: true, mode: 0o700 });
  // the launch's own directory: the sandbox uid's alone, its mount points empty on the host
  const launchDir = mkdtempSync(join(ctx.root().anchor, `${sandboxName(spec)}-`));
  chownSync(launchDir, runAs.agentHostId, runAs.agentHostId);
  const on = (name: string) => {
    const target = join(launchDir, name);
    mkdirSync(target);
    return target;
  };
  const removeOnDestroy = [spec.hostDir, launchDir];
  try {
    const staged = stageMounts(spec, runAs, () => on('mounts'));
    const mounts: AnchorMount[] = staged.bind ? [staged.bind] : [];
    if (!ctx.disk.ok) {
      const dir = join(kept ?? spec.hostDir, 'workspace');
      mkdirSync(dir, { recursive: true, mode: 0o755 });
      chownSync(dir, runAs.jobHostId, runAs.jobHostId);
      const target = on('workspace');
      mounts.push({ kind: 'bind', source: dir, target });
      return {
        workspace: target,
        tmp: null,
        root: null,
        launch: { dir: launchDir, mounts },
        mounts: staged.mounts,
        hostWorkspace: { path: dir, inLaunchNamespace: false },
        removeOnDestroy,
        quota: notEnforced(spec, ctx.disk.reason),
      };
    }
    const { diskMb } = spec.limits;
    let image: string;
    if (kept) image = await prepareKeptImage(kept, diskMb, ctx.root(), ctx.logger);
    else {
      image = join(spec.hostDir, 'disk.img');
      await ctx.spares.make(image, diskMb);
    }
    const disk = on('disk');
    mounts.push({ kind: 'disk', image, target: disk, freshTmp: kept !== null });
    // on an image, the computer's writable root layer lives on the same disk (see images/)
    const root = spec.image ? on('root') : null;
    if (spec.image && root)
      mounts.push({
        kind: 'overlay',
        lowerDirs: spec.image.lowerDirs,
        target: root,
        rootId: hostIdOf(0, runAs),
        ...(spec.seedRoot ? { seed: spec.seedRoot } : {}),
      });
    return {
      workspace: join(disk, 'workspace'),
      tmp: join(disk, 'tmp'),
      root,
      launch: { dir: launchDir, mounts },
      mounts: staged.mounts,
      hostWorkspace: { path: join(disk, 'workspace'), inLaunchNamespace: true },
      rootLayer: spec.image ? join(disk, 'root', 'upper') : null,
      removeOnDestroy,
      quota: {
        enforced: true,
        detail: `a ${diskMb} MiB disk of its own holds /workspace and /tmp${spec.image ? ' and every change to its root file system' : ''}`,
      },
    };
  } catch (e) {
    for (const dir of removeOnDestroy) rmSync(dir, { recursive: true, force: true });
    throw e;
  }
}

/**
 * Read-only mounts the sandbox uid cannot reach are copied for this generation into
 * `<hostDir>/mounts/<i>` (a snapshot, owned by the jobs' uid, modes never wider than the
 * source), bound into the launch namespace as `mounts`.
 */
function stageMounts(
  spec: SandboxSpec,
  runAs: IdMap,
  target: () => string,
): { mounts: MountSpec[]; bind: AnchorMount | null } {
  const dir = join(spec.hostDir, 'mounts');
  let anchored: string | null = null;
  const mounts = spec.mounts.map((m, i) => {
    if (!m.readOnly || reachableByAnyone(m.source)) return m;
    if (!existsSync(m.source))
      throw new PaddockError(
        'NOT_FOUND',
        `The profile mount ${m.source} does not exist; create it or remove the mount from the profile.`,
      );
    if (!anchored) {
      mkdirSync(dir, { mode: 0o700 });
      chownSync(dir, runAs.agentHostId, runAs.agentHostId);
      anchored = target();
    }
    copyOwned(m.source, join(dir, String(i)), runAs.jobHostId);
    return { ...m, source: join(anchored, String(i)) };
  });
  return { mounts, bind: anchored ? { kind: 'bind', source: dir, target: anchored } : null };
}

function notEnforced(spec: SandboxSpec, reason: string): DiskQuota {
  return {
    enforced: false,
    detail: `not enforced on /workspace (${reason}); /tmp is a ${spec.limits.diskMb} MiB tmpfs and no single file may exceed ${spec.limits.diskMb} MiB`,
  };
}
