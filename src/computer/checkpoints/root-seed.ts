/**
 * Laying a checkpoint's root layer under a new generation (a restore, a fork, a named computer
 * booting again from its latest checkpoint): the seed a launch takes (generation/start.ts writes
 * it beside the generation, the launch copies it onto the fresh disk before the overlay is
 * mounted), and the check that the computer runs on the image the layer was made over.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { PaddockError } from '../../shared/errors.js';
import type { SandboxImage } from '../backend/types.js';
import type { CheckpointStore } from './store.js';
import { type ImageIdentity, imageIdentityOf, type Manifest, type RootSeed, sameImage } from './types.js';

/** How a new generation gets the root layer of checkpoint `m` of computer `key` (undefined: it has none). */
export function rootSeedOf(store: CheckpointStore, key: string, m: Manifest): RootSeed | undefined {
  const layer = m.rootLayer;
  if (!layer) return undefined;
  return {
    image: layer.image,
    bytes: layer.bytes,
    fill: (dir) => store.restore(key, m.id, dir, { layer: 'root' }),
  };
}

/**
 * INVALID_ARGUMENT unless checkpoint `m` can be restored onto a computer running on `image` (null:
 * no image): a checkpoint without a root layer fits any computer.
 */
export function assertRootFits(m: Manifest, image: ImageIdentity | null): void {
  const root = m.rootLayer;
  if (!root || (image && sameImage(root.image, image))) return;
  const runs = image
    ? `on "${image.name}"${image.name === root.image.name ? ' (rebuilt since)' : ''}`
    : 'without an image';
  throw new PaddockError(
    'INVALID_ARGUMENT',
    `Checkpoint ${m.id} holds a root layer made over the image "${root.image.name}", and this computer runs ${runs}: launch a profile on that image first, then restore.`,
    { checkpointId: m.id, image: root.image.name },
  );
}

/**
 * The root layer a named computer booting again from checkpoint `id` gets back: its seed when the
 * profile runs on the image it was made over; `skipped` says why not when it does not (the
 * computer then boots on the image's bare root, with its /workspace restored).
 */
export function comebackRootSeed(
  store: CheckpointStore,
  key: string,
  id: string,
  image: SandboxImage | undefined,
): { seed?: RootSeed; skipped?: string } {
  let m: Manifest;
  try {
    m = JSON.parse(readFileSync(join(store.dirOf(key), 'manifests', `${id}.json`), 'utf8')) as Manifest;
  } catch (e) {
    return { skipped: `its manifest could not be read (${(e as Error).message})` };
  }
  if (!m.rootLayer) return {};
  if (!image || !sameImage(m.rootLayer.image, imageIdentityOf(image)))
    return {
      skipped: `it was made over the image "${m.rootLayer.image.name}", and the profile runs ${image ? `on "${image.name}"` : 'without an image'}`,
    };
  return { seed: rootSeedOf(store, key, m) as RootSeed };
}
