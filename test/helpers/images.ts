/**
 * The Debian image the image tests boot: built once with mmdebstrap (about a minute and
 * ~45 MB of downloads cold) into a store kept between runs — `$PADDOCK_TEST_IMAGES`, else
 * `~/.cache/paddock-test-images` — and shared by every test file (one build at a time, under a
 * lock). A warm run only opens the store.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { BwrapBackend } from '../../src/computer/backend/bwrap/backend.js';
import { ImageStore, imageIdsOf } from '../../src/computer/images/index.js';
import { buildProfileImage, profileImageName } from '../../src/computer/images/profile-image.js';
import { computerSchema, profileSchema } from '../../src/config/computer-schema.js';
import { sleep } from '../../src/shared/abort.js';
import { silentLogger } from '../../src/shared/logger.js';

/** Where test images are kept between runs. */
export const TEST_IMAGE_CACHE =
  process.env.PADDOCK_TEST_IMAGES ?? join(homedir(), '.cache', 'paddock-test-images');

/** The image of the Debian test profile: bookworm's essential packages, apt and the CA bundle. */
export const DEBIAN_TEST_IMAGE = { debian: { suite: 'bookworm', packages: ['ca-certificates'] } };

/** A profile on the Debian test image (`user`: guest or root). */
export function debianProfile(id: string, user: 'guest' | 'root', extra: Record<string, unknown> = {}) {
  return {
    id,
    name: id,
    image: DEBIAN_TEST_IMAGE,
    user,
    requires: ['bash'],
    limits: { diskMb: 512 },
    ...extra,
  };
}

/** Why image tests cannot run here (false when they can). */
export function imageSkipReason(): string | false {
  if (process.getuid?.() !== 0) return 'computers on images need Paddock as root';
  // no cgroups: the check needs none, and a backend that made them would leave them to the next sweep
  const why = new BwrapBackend({ logger: silentLogger(), useCgroups: false }).imageSupport();
  if (why) return `no computers on images here: ${why}`;
  for (const tool of ['mmdebstrap', 'setfattr', 'tar'])
    if (!['/usr/bin', '/bin', '/usr/sbin'].some((d) => existsSync(join(d, tool))))
      return `${tool} is not installed`;
  return false;
}

async function withLock<T>(path: string, fn: () => Promise<T>): Promise<T> {
  for (;;) {
    try {
      mkdirSync(path);
      writeFileSync(join(path, 'pid'), String(process.pid));
      break;
    } catch {
      const pid = Number(readFileSafe(join(path, 'pid')));
      if (pid && !alive(pid)) rmSync(path, { recursive: true, force: true });
      else await sleep(500);
    }
  }
  try {
    return await fn();
  } finally {
    rmSync(path, { recursive: true, force: true });
  }
}

function readFileSafe(path: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return '';
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** The store directory holding the Debian test image, built first when it is not there. */
export async function debianTestStore(): Promise<string> {
  const dir = join(TEST_IMAGE_CACHE, 'store');
  mkdirSync(TEST_IMAGE_CACHE, { recursive: true, mode: 0o700 });
  const config = computerSchema.parse({});
  const store = new ImageStore(dir, imageIdsOf(config)).open();
  const profile = profileSchema.parse(debianProfile('debian', 'guest'));
  const name = profileImageName(profile.image!, process.cwd());
  if (store.get(name)) return dir;
  await withLock(join(TEST_IMAGE_CACHE, 'build.lock'), async () => {
    if (store.get(name)) return;
    const started = Date.now();
    process.stderr.write(`building the Debian test image ${name} with mmdebstrap (once; kept in ${dir})\n`);
    await buildProfileImage(store, profile, process.cwd(), () => undefined);
    process.stderr.write(`built ${name} in ${Math.round((Date.now() - started) / 1000)} s\n`);
  });
  return dir;
}

/** Host bytes a directory takes (du), for reports. */
export function duBytes(path: string): number {
  return Number(execFileSync('du', ['-sb', path], { encoding: 'utf8' }).split('\t')[0]);
}
