/**
 * Carrying a fresh workspace over a relaunch: launch_computer with `keepWorkspace` copies the
 * replaced generation's /workspace aside before the old one is torn down (into the new
 * generation's own host directory, which goes with it), and into the new /workspace as soon as
 * the new generation runs, before its startup script. The copies keep owners, modes and symbolic
 * links as they are (`cp -a`, never following a link the computer made).
 *
 * A restored checkpoint's root layer is written the same way beside the new generation, but is
 * never copied into a running computer: the launch copies it onto the fresh disk before the
 * overlay is mounted (backend/bwrap/launch-namespace.ts), so it exists whole under its final name
 * or not at all.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import { rename, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { PaddockError } from '../../shared/errors.js';
import type { ComputerLog } from '../logs.js';

/** Where the carried workspace of a generation lives, inside its own host directory. */
export function carriedWorkspaceDir(generationDir: string): string {
  return join(generationDir, 'carried-workspace');
}

/** Where the restored root layer of a generation waits for its launch, inside its own host directory. */
export function carriedRootDir(generationDir: string): string {
  return join(generationDir, 'carried-root');
}

/**
 * Has `write` fill a directory beside `dir`, which becomes `dir` only once complete: a launch
 * never lays a half-written root layer over its image (it finds none and fails instead).
 */
export async function writeWhole(dir: string, write: (dir: string) => Promise<void>): Promise<void> {
  const partial = `${dir}.partial`;
  mkdirSync(join(dir, '..'), { recursive: true, mode: 0o711 });
  await rm(partial, { recursive: true, force: true });
  try {
    await write(partial);
    await rename(partial, dir);
  } catch (e) {
    await rm(partial, { recursive: true, force: true });
    throw e;
  }
}

/** Copies `from` (a workspace directory) to `to`, which must not exist yet. */
export function copyWorkspace(from: string, to: string, signal?: AbortSignal): Promise<void> {
  if (!existsSync(from)) {
    return Promise.reject(
      new PaddockError(
        'NOT_FOUND',
        'The workspace of the replaced computer is gone; launch without keepWorkspace.',
      ),
    );
  }
  if (!existsSync(to)) mkdirSync(join(to, '..'), { recursive: true, mode: 0o711 });
  return new Promise((resolve, reject) => {
    const cp = spawn('cp', ['-a', '--no-dereference', '--', from, to], {
      stdio: ['ignore', 'ignore', 'pipe'],
      ...(signal ? { signal } : {}),
    });
    let err = '';
    cp.stderr.on('data', (d: Buffer) => {
      if (err.length < 2000) err += d.toString();
    });
    cp.once('error', (e) => reject(e));
    cp.once('close', (code) =>
      code === 0
        ? resolve()
        : reject(
            new PaddockError('INTERNAL', `Could not copy the workspace (cp exited ${code}): ${err.trim()}`),
          ),
    );
  });
}

/** Copies a carried workspace's contents into the running generation's /workspace, then drops it. */
export async function restoreWorkspace(carried: string, workspace: string): Promise<void> {
  await copyWorkspace(`${carried}/.`, workspace);
  await rm(carried, { recursive: true, force: true });
}

/** Puts the replaced generation's /workspace (copied aside at launch) into `c`'s, logging how it went. */
export async function carryInto(
  c: { generation: number; hostWorkspace: string },
  carried: string,
  log: ComputerLog,
): Promise<void> {
  try {
    await restoreWorkspace(carried, c.hostWorkspace);
    log.add('info', 'computer.workspace_carried', 'The previous /workspace was copied in.', {
      generation: c.generation,
    });
  } catch (e) {
    log.add(
      'err',
      'computer.workspace_carried',
      `The previous /workspace could not be copied in: ${(e as Error).message}`,
      { generation: c.generation },
    );
  }
}
