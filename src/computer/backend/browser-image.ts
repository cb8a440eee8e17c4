/**
 * The browser computer's image (built by scripts/build-browser-image.mjs) and how the page boots
 * it. The server checks the image against its manifest before offering a browser profile, serves
 * its files to the dock page, and tells the page the machine to emulate.
 */
import { createHash } from 'node:crypto';
import { readFileSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The files of an image, as the page fetches them. */
export const IMAGE_FILES = ['bzImage', 'initrd.img', 'bios.bin', 'vgabios.bin'] as const;
export type ImageFile = (typeof IMAGE_FILES)[number];

/** The command that builds the image (what an unavailable profile tells the person to run). */
export const BUILD_COMMAND = 'node scripts/build-browser-image.mjs';

/**
 * The image version this server speaks to: the build script writes it into the manifest, and it
 * changes whenever the guest agent's protocol does, so an image built by an older checkout is
 * refused with the command that rebuilds it instead of misunderstanding the agent.
 */
export const IMAGE_VERSION = 2;

/** The machine the page emulates. */
export interface BrowserVmSettings {
  memoryMb: number;
  /**
   * Kernel command line. `cryptomgr.notests` skips the crypto self-tests and `noisapnp` the ISA
   * Plug and Play probe: together about half of the kernel's boot under emulation.
   */
  cmdline: string;
}

export const DEFAULT_VM_SETTINGS: BrowserVmSettings = {
  memoryMb: 128,
  cmdline:
    'console=ttyS0 quiet loglevel=3 tsc=reliable mitigations=off random.trust_cpu=on cryptomgr.notests noisapnp no_timer_check',
};

/** The repository's browser-image/ (this file is compiled to dist/src/computer/backend/). */
export function defaultImageDir(): string {
  return join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..', '..', 'browser-image');
}

interface Manifest {
  version: number;
  kernel: string;
  files: Record<string, { bytes: number; sha256: string }>;
}

/** A checked image, or why it cannot be used. */
export type ImageCheck = { ok: true; dir: string; kernel: string } | { ok: false; reason: string };

/**
 * Checks every file of the image against its manifest (size and sha256). The result is kept
 * while the manifest's modification time stays the same.
 */
export class BrowserImage {
  private cached: { mtimeMs: number; check: ImageCheck } | null = null;

  constructor(readonly dir: string = defaultImageDir()) {}

  check(): ImageCheck {
    const manifestPath = join(this.dir, 'manifest.json');
    let mtimeMs: number;
    try {
      mtimeMs = statSync(manifestPath).mtimeMs;
    } catch {
      return this.missing(`the browser computer's image is not built (no ${manifestPath})`);
    }
    if (this.cached?.mtimeMs === mtimeMs) return this.cached.check;
    const check = this.verify(manifestPath);
    this.cached = { mtimeMs, check };
    return check;
  }

  /** Path of one file of a checked image. */
  path(file: ImageFile): string {
    return join(this.dir, file);
  }

  private verify(manifestPath: string): ImageCheck {
    let manifest: Manifest;
    try {
      manifest = JSON.parse(readFileSync(manifestPath, 'utf8')) as Manifest;
    } catch (e) {
      return this.missing(`the image manifest ${manifestPath} is unreadable (${(e as Error).message})`);
    }
    if (manifest.version !== IMAGE_VERSION) {
      return this.missing(
        `the image is version ${String(manifest.version)} but this server needs version ${IMAGE_VERSION} (it was built by another Paddock)`,
      );
    }
    for (const file of IMAGE_FILES) {
      const want = manifest.files?.[file];
      let data: Buffer;
      try {
        data = readFileSync(join(this.dir, file));
      } catch {
        return this.missing(`the image lacks ${file}`);
      }
      const sha256 = createHash('sha256').update(data).digest('hex');
      if (!want || want.bytes !== data.length || want.sha256 !== sha256) {
        return this.missing(`the image file ${file} does not match its manifest (corrupt or partly built)`);
      }
    }
    return { ok: true, dir: this.dir, kernel: String(manifest.kernel) };
  }

  private missing(why: string): ImageCheck {
    return { ok: false, reason: `${why}; build it with \`${BUILD_COMMAND}\` in the Paddock checkout.` };
  }
}
