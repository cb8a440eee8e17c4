/** The image store of one data directory and the images of its profiles, as the server opens them. */
import { join } from 'node:path';
import type { ComputerConfig } from '../../config/computer-schema.js';
import { ProfileImages } from './profile-image.js';
import { ImageStore } from './store.js';

/** Where a data directory's images live (computer.imagesDir, else `<data>/images`). */
export function imagesDirOf(config: Pick<ComputerConfig, 'imagesDir'>, dataDir: string): string {
  return config.imagesDir ?? join(dataDir, 'images');
}

/** The sandbox accounts an image is stored for (computer.sandboxUid and the next uid). */
export function imageIdsOf(config: Pick<ComputerConfig, 'sandboxUid'>) {
  return { agentHostId: config.sandboxUid, jobHostId: config.sandboxUid + 1 };
}

/**
 * Opens the store (only as root: its files belong to the image id range) and the profiles'
 * view of it. `support` says why this server cannot run computers on images, or null.
 */
export function openProfileImages(
  config: ComputerConfig,
  dataDir: string,
  projectDir: string,
  support: () => string | null,
): ProfileImages {
  const store =
    process.getuid?.() === 0 ? new ImageStore(imagesDirOf(config, dataDir), imageIdsOf(config)).open() : null;
  return new ProfileImages(store, projectDir, support);
}

export { ImageStore } from './store.js';
