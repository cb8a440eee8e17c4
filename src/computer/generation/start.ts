/**
 * Starting a generation of a computer: the profile's checks, the cap, the teardown of the
 * generation it replaces, and the new Generation, booting in place.
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { ProfileConfig } from '../../config/computer-schema.js';
import { PaddockError } from '../../shared/errors.js';
import { imageIdentityOf, type RootSeed, sameImage } from '../checkpoints/types.js';
import type { ComputerLog } from '../logs.js';
import type { ComputerContext } from '../service-context.js';
import { Generation } from './generation.js';
import { carriedRootDir, carriedWorkspaceDir, copyWorkspace, writeWhole } from './workspace-carry.js';

export interface GenerationRequest {
  /** The computer's key. */
  name: string;
  profileId: string;
  log: ComputerLog;
  /** The generation being replaced, if any. */
  previous: Generation | null;
  /** Whether the computer already counts against the server's cap. */
  active: boolean;
  /** Carry the replaced generation's fresh /workspace over (copied before it is torn down). */
  keepWorkspace?: boolean;
  /** Fill the new fresh /workspace from elsewhere instead: writes the files into the empty directory it is given. */
  seedWorkspace?: (dir: string) => Promise<void>;
  /**
   * The new generation's writable root layer (a restored checkpoint's): `fill` writes it into the
   * empty directory it is given, taken over `image`, which the profile's image must be.
   */
  seedRoot?: RootSeed;
}

/** Bytes per second the launch is granted for copying a restored root layer onto the disk. */
const SEED_COPY_BYTES_PER_S = 10 * 1024 * 1024;

/** What became of the replaced generation's /workspace. */
export type PreviousWorkspace = 'none' | 'kept' | 'carried' | 'deleted';

/**
 * A new generation of computer `name`, booting. Refused when the server closes, the profile is
 * unavailable, the previous generation still boots or the cap is reached; the previous one is
 * torn down before the new one boots.
 */
export function startGeneration(
  ctx: ComputerContext,
  req: GenerationRequest,
): { computer: Generation; previousWorkspace: PreviousWorkspace; carried: string | null } {
  const { log, previous } = req;
  ctx.assertOpen();
  const profile = ctx.profiles.get(req.profileId);
  const { available, reason } = ctx.profiles.availability(profile);
  if (!available) {
    log.add('warn', 'computer.launch_refused', `Profile ${profile.id} cannot launch: ${reason}`);
    throw new PaddockError(
      'UNSUPPORTED_CAPABILITY',
      `Profile "${profile.id}" is not available on this server (${reason}) Pick an available profile from list_profiles.`,
    );
  }
  if (previous?.lifecycle === 'booting') {
    log.add(
      'warn',
      'computer.launch_refused',
      `Launch of ${profile.id} refused: generation ${previous.generation} is still booting.`,
      { generation: previous.generation },
    );
    throw new PaddockError(
      'NOT_RUNNING',
      `Generation ${previous.generation} is still booting; poll get_computer_status until it is running or in error before launching again.`,
      { generation: previous.generation },
    );
  }
  if (!req.active) ctx.assertCapacity(req.name);
  const generation = ctx.nextGeneration(req.name);
  const freshBefore = previous !== null && ctx.workspaceMode(req.name, previous.profile) === 'fresh';
  // keepWorkspace: the old /workspace is copied aside now and into the new one once it runs;
  // seedWorkspace (a restored checkpoint): the files are written aside now, copied in the same way
  const freshAfter = ctx.workspaceMode(req.name, profile) === 'fresh';
  const rootSeed = req.seedRoot ? rootSeedDir(ctx, req.seedRoot, profile, generation, freshAfter) : null;
  const carried =
    (previous && freshBefore && req.keepWorkspace && freshAfter) || (req.seedWorkspace && freshAfter)
      ? carriedWorkspaceDir(ctx.generationDir(generation))
      : null;
  const keptDir = ctx.keptDir(req.name, profile);
  // a warm sandbox's disk is another's: a carried workspace boots cold, in this generation's directory
  const warm = carried || rootSeed ? null : ctx.takeWarm(req.name, profile);
  const stale = () =>
    previous?.destroy(
      new PaddockError(
        'STALE_GENERATION',
        `Generation ${previous.generation} was replaced by generation ${generation}; use the current computer.`,
      ),
    ) ?? Promise.resolve();
  // the copy (or the seed) is made before the old generation's processes are killed and its disk removed
  const seed = req.seedWorkspace;
  const fill = seed
    ? async (dir: string) => {
        mkdirSync(join(dir, '..'), { recursive: true, mode: 0o711 });
        await seed(dir);
      }
    : previous
      ? (dir: string) => copyWorkspace(previous.hostWorkspace, dir)
      : null;
  const seedRoot = req.seedRoot?.fill;
  const prepare = async (): Promise<void> => {
    if (carried && fill) await fill(carried);
    if (rootSeed && seedRoot)
      // without it the launch fails (a seed that is not there), never boots the image's bare root
      await writeWhole(rootSeed, seedRoot).catch((e: unknown) => {
        log.add('err', 'computer.restore', `The root layer could not be written: ${(e as Error).message}`, {
          generation,
        });
        throw e;
      });
  };
  const teardown =
    (carried && fill) || rootSeed
      ? prepare().then(stale, (e: unknown) =>
          stale().then(() => {
            throw e;
          }),
        )
      : stale();
  // The previous generation is stopped at once (its link closed, its ids stale) and killed here.
  // A cold boot starts after its processes are gone; a warm sandbox shares nothing with them
  // and runs at once, unless a read-write profile mount is host state both would see.
  const sharesHostState = profile.mounts.some((m) => !m.readOnly);
  const waitFor = warm && !sharesHostState ? Promise.resolve() : teardown;
  void teardown.catch(() => undefined);
  // a cold boot of a computer that does not count yet may need the room of a pooled sandbox
  const room = warm || req.active ? undefined : ctx.makeRoom();
  if (previous) {
    log.add(
      'info',
      'computer.replace',
      `Generation ${previous.generation} is being replaced; all its processes are killed.`,
      { generation: previous.generation },
    );
  }
  let computer: Generation;
  try {
    computer = new Generation({
      name: req.name,
      generation,
      profile: ctx.withImageEnv(ctx.withSharedMounts(profile)),
      backend: ctx.backend,
      log,
      hostDir: warm?.hostDir ?? ctx.generationDir(generation),
      ...(keptDir ? { keptDir } : {}),
      retentionBytes: profile.limits.outputBytes ?? ctx.config.retentionBytes,
      bootTimeoutMs:
        (profile.backend === 'browser' ? ctx.config.browserBootTimeoutMs : ctx.config.bootTimeoutMs) +
        (rootSeed && req.seedRoot ? Math.ceil((req.seedRoot.bytes / SEED_COPY_BYTES_PER_S) * 1000) : 0),
      warm,
      before: room ? Promise.all([teardown, room]).then(() => undefined) : waitFor,
      egress: ctx.egress?.forComputer(generation, profile, log, req.name) ?? null,
      image: warm ? undefined : ctx.imageOf(profile),
      ...(rootSeed ? { seedRoot: rootSeed } : {}),
      emit: (event) => ctx.events.emit(event),
    });
  } catch (e) {
    // a taken warm sandbox is this generation's alone: it never goes back to the pool
    void warm?.destroy();
    throw e;
  }
  log.add(
    'info',
    'computer.launch',
    `Launching generation ${generation} with profile ${profile.id}${carried ? ' (workspace carried over)' : keptDir ? ' (workspace kept)' : ''}${warm ? ' on a warm sandbox' : ''}.`,
    { generation },
  );
  const previousWorkspace: PreviousWorkspace = !previous
    ? 'none'
    : carried && !req.seedWorkspace
      ? 'carried'
      : freshBefore
        ? 'deleted'
        : 'kept';
  return { computer, previousWorkspace, carried };
}

/**
 * Where generation `generation`'s restored root layer is written; refused unless the profile runs
 * on the image it was taken over, with a fresh disk.
 */
function rootSeedDir(
  ctx: ComputerContext,
  seed: RootSeed,
  profile: ProfileConfig,
  generation: number,
  fresh: boolean,
): string {
  const image = ctx.imageOf(profile);
  if (!image || !sameImage(imageIdentityOf(image), seed.image))
    throw new PaddockError(
      'INVALID_ARGUMENT',
      `This root layer was taken over the image "${seed.image.name}", and profile "${profile.id}" ${image ? `now runs on "${image.name}"${image.name === seed.image.name ? ' as rebuilt since' : ''}` : 'has no image'}: a root layer only fits the image it was made over. Launch a profile on that image, or restore into a computer on it.`,
      { image: seed.image.name },
    );
  if (!fresh)
    throw new PaddockError(
      'UNSUPPORTED_CAPABILITY',
      `Profile "${profile.id}" keeps its disk across launches; a root layer is restored only onto a fresh one.`,
    );
  return carriedRootDir(ctx.generationDir(generation));
}

/**
 * Once `c` runs: the profile's startup script, then `extra` (a launch link's script). A script
 * that does not start is an error entry in the log; the computer stays up.
 */
export async function afterBootScripts(
  c: Generation,
  log: ComputerLog,
  startScript: (script: string) => Promise<unknown>,
  extra?: (c: Generation) => Promise<void>,
): Promise<void> {
  if (c.lifecycle !== 'running') return;
  const failed = (what: string) => (e: unknown) => {
    log.add('err', 'computer.startup_failed', `${what} did not start: ${(e as Error).message}`, {
      generation: c.generation,
    });
  };
  const script = c.profile.startupScript;
  if (script) await startScript(script).catch(failed("The profile's startup script"));
  await extra?.(c).catch(failed("The launch link's startup script"));
}
