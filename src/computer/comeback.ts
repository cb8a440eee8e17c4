/**
 * A named computer coming back: when one boots with no generation of it running (after a stop,
 * a crash or a restart of the server), its latest checkpoint gives it its /workspace and, on the
 * image that checkpoint was made over, its root layer. Private computers keep nothing (their
 * files go with their owner), nor do browser computers; a kept workspace needs none of it.
 */
import type { ProfileConfig } from '../config/computer-schema.js';
import type { SandboxImage } from './backend/types.js';
import { comebackRootSeed } from './checkpoints/root-seed.js';
import type { CheckpointStore } from './checkpoints/store.js';
import type { CheckpointInfo, RootSeed } from './checkpoints/types.js';
import type { ComputerLog } from './logs.js';

/** What the comeback reads of its computer. */
export interface ComebackHost {
  readonly name: string;
  readonly log: ComputerLog;
  readonly checkpoints: { store: CheckpointStore; key: string };
  workspaceKept(profileId: string): boolean;
  profile(profileId: string): ProfileConfig;
  /** The image a profile boots on (undefined: the host's directories); throws when it is missing. */
  imageOf(profile: ProfileConfig): SandboxImage | undefined;
}

/** How a computer comes back: the checkpoint, and what it seeds. */
export interface Comeback {
  checkpoint: CheckpointInfo;
  seedWorkspace: (dir: string) => Promise<void>;
  seedRoot?: RootSeed;
}

/** The comeback of computer `host` launching `profileId` now, or null when it has none. */
export function comebackOf(host: ComebackHost, profileId: string): Comeback | null {
  if (!host.name.startsWith('named:') || host.workspaceKept(profileId)) return null;
  const profile = host.profile(profileId);
  if (profile.backend === 'browser') return null;
  const { store, key } = host.checkpoints;
  const checkpoint = store.latest(key);
  if (!checkpoint) return null;
  const seedRoot = rootOf(host, profile, checkpoint.id);
  return {
    checkpoint,
    seedWorkspace: (dir) => store.restore(key, checkpoint.id, dir),
    ...(seedRoot ? { seedRoot } : {}),
  };
}

/**
 * The root layer the computer gets back from checkpoint `id`: the checkpoint's, when the profile
 * runs on the image it was made over (else none, logged).
 */
function rootOf(host: ComebackHost, profile: ProfileConfig, id: string): RootSeed | undefined {
  let image: SandboxImage | undefined;
  try {
    image = host.imageOf(profile);
  } catch {
    return undefined; // the launch itself says what is missing
  }
  const { store, key } = host.checkpoints;
  const { seed, skipped } = comebackRootSeed(store, key, id, image);
  if (skipped)
    host.log.add(
      'warn',
      'computer.restore',
      `The root layer of checkpoint ${id} is not restored (${skipped}); the computer boots on its image's own root with its /workspace restored.`,
    );
  return seed;
}
