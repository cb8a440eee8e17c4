/**
 * `paddock images import FILE`: an image archive (OCI layout or Docker archive, as `docker save`,
 * `podman save` and `skopeo copy … oci-archive:` write them) unpacked into a scratch directory,
 * verified whole (oci.ts), then stored.
 */
import { execFile } from 'node:child_process';
import { existsSync, rmSync } from 'node:fs';
import { basename, resolve } from 'node:path';
import { promisify } from 'node:util';
import { PaddockError } from '../../shared/errors.js';
import { readImageDir } from './oci.js';
import { IMAGE_NAME, type ImageRecord, type ImageStore } from './store.js';

const run = promisify(execFile);

/** The name an archive gets when none is given: its file name without the extension. */
export function archiveImageName(file: string): string {
  const base = basename(file)
    .replace(/\.(tar|tar\.gz|tgz|oci|tar\.zst)$/i, '')
    .toLowerCase()
    .replace(/[^a-z0-9._-]+/g, '-')
    .replace(/^[^a-z0-9]+/, '')
    .slice(0, 128);
  return IMAGE_NAME.test(base) ? base : 'image';
}

/** Imports the archive at `file` as `name`. */
export async function importArchive(
  store: ImageStore,
  file: string,
  name: string,
  progress: (line: string) => void = () => undefined,
): Promise<ImageRecord> {
  const path = resolve(file);
  if (!existsSync(path))
    throw new PaddockError('NOT_FOUND', `There is no file ${path}; give the path of an image archive.`);
  const work = store.scratch();
  try {
    progress(`reading ${path}`);
    try {
      await run('tar', ['-x', '--no-same-owner', '--no-same-permissions', '-C', work, '-f', path], {
        maxBuffer: 4 * 1024 * 1024,
      });
    } catch (e) {
      throw new PaddockError(
        'INVALID_ARGUMENT',
        `${path} is not a tar archive (${((e as { stderr?: string }).stderr ?? '').trim().slice(0, 200)}); make one with docker save, podman save or skopeo copy … oci-archive:FILE. Nothing was imported.`,
      );
    }
    const source = await readImageDir(work);
    progress(
      `verified ${source.layers.length} layer${source.layers.length === 1 ? '' : 's'} of ${source.id.slice(0, 19)}`,
    );
    return await store.install(name, source, { kind: 'archive', file: path }, progress);
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}
