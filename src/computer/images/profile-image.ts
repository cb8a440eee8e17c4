/**
 * Profiles and their images: which store name a profile's `image` has, how it is built, what
 * list_profiles says about it, and what a launch mounts. An image that is not in the store makes
 * its profile unavailable, with the command that builds it.
 */
import { existsSync, lstatSync } from 'node:fs';
import { isAbsolute, join, resolve } from 'node:path';
import type { ImageConfig, ProfileConfig } from '../../config/computer-schema.js';
import { PaddockError } from '../../shared/errors.js';
import type { SandboxImage } from '../backend/types.js';
import { archiveImageName, importArchive } from './archive.js';
import { buildDebianImage, debianImageName } from './debian.js';
import { pullImage, refImageName } from './registry.js';
import type { ImageRecord, ImageStore } from './store.js';

/** What list_profiles shows of a profile's image. */
export interface ProfileImageInfo {
  [key: string]: unknown;
  /** The image's store name. */
  name: string;
  /** Where it comes from, in words. */
  source: string;
  /** Whether it is in the store. */
  built: boolean;
  /** The system it holds (its os-release name), once built. */
  os: string | null;
  /** Bytes of its files, once built. */
  sizeBytes: number | null;
  /** Who jobs run as. */
  user: 'guest' | 'root';
  /** The command that builds (or rebuilds) it. */
  buildCommand: string;
}

/** The store name of a profile's image. */
export function profileImageName(image: ImageConfig, baseDir: string): string {
  if ('debian' in image) return debianImageName(image.debian);
  if ('name' in image) return image.name;
  if ('archive' in image.oci) return archiveImageName(resolveFrom(baseDir, image.oci.archive));
  return refImageName(image.oci.ref);
}

/** What an image config says, in words. */
export function describeImageSource(image: ImageConfig): string {
  if ('debian' in image) {
    const { suite, packages, variant } = image.debian;
    return `Debian ${suite} (mmdebstrap, variant ${variant})${packages.length ? ` with ${packages.join(', ')}` : ''}`;
  }
  if ('name' in image) return `the stored image "${image.name}"`;
  if ('archive' in image.oci) return `the image archive ${image.oci.archive}`;
  return `the registry image ${image.oci.ref}`;
}

function resolveFrom(baseDir: string, path: string): string {
  return isAbsolute(path) ? path : resolve(baseDir, path);
}

/** Builds, imports or pulls a profile's image into the store. */
export async function buildProfileImage(
  store: ImageStore,
  profile: ProfileConfig,
  baseDir: string,
  progress: (line: string) => void,
  signal?: AbortSignal,
): Promise<ImageRecord> {
  const { image } = profile;
  if (!image)
    throw new PaddockError(
      'INVALID_ARGUMENT',
      `The profile "${profile.id}" has no image (it uses the host's directories); add image to it in paddock.yaml.`,
    );
  const name = profileImageName(image, baseDir);
  if ('debian' in image) return buildDebianImage(store, name, image.debian, progress, signal);
  if ('name' in image)
    throw new PaddockError(
      'INVALID_ARGUMENT',
      `The profile "${profile.id}" names the stored image "${image.name}", which paddock images import or pull make.`,
    );
  if ('archive' in image.oci)
    return importArchive(store, resolveFrom(baseDir, image.oci.archive), name, progress);
  return pullImage(store, image.oci.ref, name, progress);
}

/** The images of the server's profiles. */
export class ProfileImages {
  constructor(
    private readonly store: ImageStore | null,
    /** Where relative archive paths start (the directory of paddock.yaml). */
    private readonly baseDir: string,
    /** Why this server cannot run computers on images, or null. */
    private readonly support: () => string | null,
  ) {}

  private buildCommand(profile: ProfileConfig): string {
    const image = profile.image;
    if (image && 'name' in image) return `paddock images import FILE --name ${image.name}`;
    return `paddock images build ${profile.id}`;
  }

  /** What list_profiles shows (null for a profile on the host's directories). */
  info(profile: ProfileConfig): ProfileImageInfo | null {
    if (!profile.image) return null;
    const name = profileImageName(profile.image, this.baseDir);
    const record = this.store?.get(name) ?? null;
    return {
      name,
      source: describeImageSource(profile.image),
      built: record !== null,
      os: record?.os ?? null,
      sizeBytes: record?.sizeBytes ?? null,
      user: profile.user,
      buildCommand: this.buildCommand(profile),
    };
  }

  /** Why the profile's image cannot be used now, or null (also null without an image). */
  unavailable(profile: ProfileConfig): string | null {
    if (!profile.image) return null;
    const why = this.support();
    if (why) return `its image cannot run on this server: ${why}.`;
    if (!this.store) return 'this server has no image store.';
    const name = profileImageName(profile.image, this.baseDir);
    if (!this.store.get(name))
      return `its image "${name}" is not built yet; run "${this.buildCommand(profile)}".`;
    return null;
  }

  /** Whether a program exists in the profile's image (its `requires`). */
  hasProgram(profile: ProfileConfig, program: string): boolean {
    const image = this.mountable(profile);
    if (!image) return false;
    return image.lowerDirs.some((dir) =>
      ['usr/local/bin', 'usr/bin', 'bin', 'usr/sbin', 'sbin'].some((bin) => {
        try {
          return !lstatSync(join(dir, bin, program)).isCharacterDevice();
        } catch {
          return false;
        }
      }),
    );
  }

  /** The environment the image's config sets (PATH excepted: the computer's is fixed). */
  env(profile: ProfileConfig): Record<string, string> {
    if (!profile.image || !this.store) return {};
    const record = this.store.get(profileImageName(profile.image, this.baseDir));
    const out: Record<string, string> = {};
    for (const entry of record?.env ?? []) {
      const eq = entry.indexOf('=');
      const key = entry.slice(0, eq);
      if (eq > 0 && /^[A-Za-z_][A-Za-z0-9_]*$/.test(key) && key !== 'PATH') out[key] = entry.slice(eq + 1);
    }
    return out;
  }

  /** What a launch of the profile mounts; undefined for a profile on the host's directories. */
  mountable(profile: ProfileConfig): SandboxImage | undefined {
    if (!profile.image) return undefined;
    if (!this.store)
      throw new PaddockError(
        'UNSUPPORTED_CAPABILITY',
        'This server has no image store; use a profile without an image.',
      );
    const name = profileImageName(profile.image, this.baseDir);
    const { lowerDirs } = this.store.mountable(name, `run "${this.buildCommand(profile)}"`);
    if (!lowerDirs.every((d) => existsSync(d)))
      throw new PaddockError(
        'NOT_FOUND',
        `The image "${name}" is incomplete; run "${this.buildCommand(profile)}".`,
      );
    return { name, lowerDirs, user: profile.user };
  }
}
