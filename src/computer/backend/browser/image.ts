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

/** The snapshot of the booted machine (scripts/snapshot-browser-image.mjs), when the image has one. */
export const STATE_FILE = 'state.bin';

/** The command that builds the image (what an unavailable profile tells the person to run). */
export const BUILD_COMMAND = 'node scripts/build-browser-image.mjs';

/**
 * The image version this server speaks to: the build script writes it into the manifest, and it
 * changes whenever the guest agent's protocol does, so an image built by an older checkout is
 * refused with the command that rebuilds it instead of misunderstanding the agent.
 */
export const IMAGE_VERSION = 6;

/** The machine the page emulates: scripts/browser-image/machine.json, which the snapshot boots too. */
export interface BrowserVmSettings {
  memoryMb: number;
  /**
   * Kernel command line. `cryptomgr.notests` skips the crypto self-tests and `noisapnp` the ISA
   * Plug and Play probe: together about half of the kernel's boot under emulation.
   */
  cmdline: string;
  /** The emulator's devices (v86 options), the same for a cold boot and for the snapshot. */
  emulator: Record<string, number | boolean>;
  /** Restore the image's snapshot of the booted machine instead of booting it. */
  restore?: boolean;
  /** The generation the machine is (the hosting page marks that computer as living in it). */
  generation?: number;
}

/** The machine of scripts/browser-image/machine.json (this file is compiled to dist/src/computer/backend/browser/). */
export function vmMachine(): BrowserVmSettings {
  const path = join(
    dirname(fileURLToPath(import.meta.url)),
    '..',
    '..',
    '..',
    '..',
    '..',
    'scripts',
    'browser-image',
    'machine.json',
  );
  const m = JSON.parse(readFileSync(path, 'utf8')) as BrowserVmSettings;
  return { memoryMb: m.memoryMb, cmdline: m.cmdline, emulator: m.emulator };
}

/** The repository's browser-image/ (this file is compiled to dist/src/computer/backend/browser/). */
export function defaultImageDir(): string {
  return join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..', '..', '..', 'browser-image');
}

interface Manifest {
  version: number;
  kernel: string;
  files: Record<string, { bytes: number; sha256: string }>;
  state?: { file: string; bytes: number; sha256: string; memoryMb: number };
}

/** A checked image, or why it cannot be used. */
export type ImageCheck =
  | {
      ok: true;
      dir: string;
      kernel: string;
      /** The snapshot of the booted machine (its memory size), or null: pages boot cold. */
      state: { memoryMb: number } | null;
    }
  | { ok: false; reason: string };

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
  path(file: ImageFile | typeof STATE_FILE): string {
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
      if (!this.matches(file, manifest.files?.[file])) {
        return this.missing(
          `the image file ${file} does not match its manifest (corrupt, missing or partly built)`,
        );
      }
    }
    // a snapshot that does not match is not used: the machine boots cold, as without one
    const { state } = manifest;
    const usable = state?.file === STATE_FILE && this.matches(STATE_FILE, state);
    return {
      ok: true,
      dir: this.dir,
      kernel: String(manifest.kernel),
      state: usable ? { memoryMb: state.memoryMb } : null,
    };
  }

  /** Whether a file of the image has the size and sha256 its manifest gives. */
  private matches(file: string, want: { bytes: number; sha256: string } | undefined): boolean {
    let data: Buffer;
    try {
      data = readFileSync(join(this.dir, file));
    } catch {
      return false;
    }
    const sha256 = createHash('sha256').update(data).digest('hex');
    return want !== undefined && want.bytes === data.length && want.sha256 === sha256;
  }

  private missing(why: string): ImageCheck {
    return { ok: false, reason: `${why}; build it with \`${BUILD_COMMAND}\` in the Paddock checkout.` };
  }
}
