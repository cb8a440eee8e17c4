/**
 * Images built from Debian packages with mmdebstrap: a suite, a variant (`apt` by default: the
 * essential packages and apt, so `apt-get install` works inside) and the profile's packages, as
 * one tar that becomes the image's single layer. mmdebstrap needs no root (its `unshare` mode);
 * as root it builds directly. Its progress lines go to `progress` as they come.
 */
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { PaddockError } from '../../shared/errors.js';
import { digestsOf } from './oci.js';
import type { ImageRecord, ImageStore } from './store.js';

/** What a Debian image is made of. */
export interface DebianImageSpec {
  suite: string;
  packages: string[];
  /** The Debian mirror (mmdebstrap's default when absent). */
  mirror?: string;
  /** mmdebstrap's variant: `apt` (default), `minbase`, `essential`, `important`, `standard`. */
  variant: string;
}

/** The store name of a Debian image: its suite and a digest of everything that makes it. */
export function debianImageName(spec: DebianImageSpec): string {
  const key = JSON.stringify({
    suite: spec.suite,
    packages: [...new Set(spec.packages)].sort(),
    mirror: spec.mirror ?? null,
    variant: spec.variant,
  });
  return `debian-${spec.suite}-${createHash('sha256').update(key).digest('hex').slice(0, 10)}`;
}

/** Builds the image with mmdebstrap and stores it as `name`. */
export async function buildDebianImage(
  store: ImageStore,
  name: string,
  spec: DebianImageSpec,
  progress: (line: string) => void,
  signal?: AbortSignal,
): Promise<ImageRecord> {
  const work = store.scratch();
  try {
    const tar = join(work, 'rootfs.tar');
    const args = [
      `--variant=${spec.variant}`,
      '--format=tar',
      '--skip=output/dev',
      ...(spec.packages.length > 0 ? [`--include=${[...new Set(spec.packages)].join(',')}`] : []),
      spec.suite,
      tar,
      ...(spec.mirror ? [spec.mirror] : []),
    ];
    progress(`mmdebstrap ${args.join(' ')}`);
    await runWithProgress('mmdebstrap', args, progress, signal);
    const { diffId } = await digestsOf(tar, 'none');
    return await store.install(
      name,
      {
        id: diffId,
        layers: [{ file: tar, compression: 'none', diffId, digest: diffId, sizeBytes: statSync(tar).size }],
      },
      {
        kind: 'debian',
        suite: spec.suite,
        packages: spec.packages,
        ...(spec.mirror ? { mirror: spec.mirror } : {}),
        variant: spec.variant,
      },
      progress,
    );
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

function runWithProgress(
  program: string,
  args: string[],
  progress: (line: string) => void,
  signal?: AbortSignal,
): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(program, args, { stdio: ['ignore', 'pipe', 'pipe'], ...(signal ? { signal } : {}) });
    let tail = '';
    const lines = (chunk: Buffer) => {
      const text = chunk.toString('utf8');
      tail = (tail + text).slice(-2000);
      for (const l of text.split('\n')) if (l.trim()) progress(l.trimEnd());
    };
    child.stdout.on('data', lines);
    child.stderr.on('data', lines);
    child.once('error', (e) =>
      reject(
        (e as NodeJS.ErrnoException).code === 'ENOENT'
          ? new PaddockError(
              'UNSUPPORTED_CAPABILITY',
              `${program} is not installed; install the Debian package "${program}" and build again.`,
            )
          : e,
      ),
    );
    child.once('close', (code) => {
      if (code === 0) resolve();
      else
        reject(
          new PaddockError(
            'UPSTREAM_ERROR',
            `${program} failed (exit ${code}): ${tail.trim().split('\n').slice(-3).join(' / ')}. Check the suite, the package names and the mirror, and build again.`,
          ),
        );
    });
  });
}
