/**
 * Computers on images: `launch_computer` → `running` on the Debian image, cold, beside today's
 * cold launch on the host's directories (alternated in the same run), the same image launch
 * from a warm sandbox, and what the image and a computer's own root layer cost on disk. The
 * image is the test suite's (built once with mmdebstrap into `$PADDOCK_TEST_IMAGES`, else
 * `~/.cache/paddock-test-images`); a cold build is timed and reported when it has to happen.
 * Needs root, loop devices and overlayfs.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { BwrapBackend } from '../src/computer/backend/bwrap/backend.js';
import { ImageStore, imageIdsOf } from '../src/computer/images/index.js';
import { buildProfileImage, ProfileImages, profileImageName } from '../src/computer/images/profile-image.js';
import type { ComputerManager } from '../src/computer/manager.js';
import { ComputerService } from '../src/computer/service.js';
import { computerSchema, profileSchema } from '../src/config/computer-schema.js';
import { PaddockError } from '../src/shared/errors.js';
import { silentLogger } from '../src/shared/logger.js';
import type { Figure } from './run.js';
import { median, timeAlternately } from './stats.js';

const RUNS = 9;
const IMAGE = { debian: { suite: 'bookworm', packages: ['ca-certificates'] } };

async function launchTimed(m: ComputerManager, profile: string, source: 'warm' | 'cold'): Promise<number> {
  const t = performance.now();
  m.launch(profile);
  const c = m.computer!;
  await c.booted;
  const ms = performance.now() - t;
  if (c.lifecycle !== 'running') throw new Error(`boot of ${profile} failed: ${c.bootError}`);
  if (c.bootSource !== source)
    throw new Error(`expected a ${source} boot of ${profile}, got ${c.bootSource}`);
  return ms;
}

function duBytes(path: string): number {
  return Number(execFileSync('du', ['-sb', path], { encoding: 'utf8' }).split('\t')[0]);
}

export async function benchImages(): Promise<Figure[]> {
  const figures: Figure[] = [];
  const cache = process.env.PADDOCK_TEST_IMAGES ?? join(homedir(), '.cache', 'paddock-test-images');
  mkdirSync(cache, { recursive: true, mode: 0o700 });
  const config = computerSchema.parse({
    autoLaunch: false,
    idleTimeoutMs: 0,
    profiles: [
      { id: 'deb', name: 'deb', image: IMAGE, requires: ['bash'] },
      { id: 'debwarm', name: 'debwarm', image: IMAGE, requires: ['bash'], warm: 1 },
    ],
  });
  const store = new ImageStore(join(cache, 'store'), imageIdsOf(config)).open();
  const deb = profileSchema.parse({ id: 'deb', name: 'deb', image: IMAGE });
  const name = profileImageName(deb.image!, process.cwd());
  if (!store.get(name)) {
    const t = performance.now();
    await buildProfileImage(store, deb, process.cwd(), () => undefined);
    figures.push({
      name: 'building the Debian image with mmdebstrap (a one-time cost; downloads included)',
      value: (performance.now() - t) / 1000,
      unit: 's',
      target: 'one-time',
    });
  }
  const record = store.get(name)!;
  const layerDirs = store.mountable(name, 'build it').lowerDirs;
  figures.push({
    name: `the Debian image on disk (${record.files} files; stored once, shared by every computer)`,
    value: layerDirs.reduce((n, d) => n + duBytes(d), 0) / (1024 * 1024),
    unit: 'MiB',
    target: 'one copy',
  });
  const dir = mkdtempSync(join(tmpdir(), 'paddock-bench-images-'));
  const logger = silentLogger();
  const backend = new BwrapBackend({ logger });
  const s = new ComputerService({
    backend,
    config,
    dataDir: dir,
    dockUrl: 'http://127.0.0.1:7331',
    logger,
    images: new ProfileImages(store, process.cwd(), () => backend.imageSupport()),
  });
  const stop = new PaddockError('NOT_RUNNING', 'bench');
  try {
    const host = s.byKey('private:bench-host');
    const image = s.byKey('private:bench-image');
    await launchTimed(host, 'shell', 'cold');
    await launchTimed(image, 'deb', 'cold');
    const [onImage, onHost] = await timeAlternately(
      RUNS,
      () => launchTimed(image, 'deb', 'cold'),
      () => launchTimed(host, 'shell', 'cold'),
      1,
    );
    figures.push({
      name: `launch_computer → running on the Debian image, cold (median of ${RUNS})`,
      value: median(onImage),
      unit: 'ms',
      target: "≤ 1.5× today's cold launch",
      peers: [{ name: "today's cold launch (the host's directories)", value: median(onHost) }],
    });
    // what a booted computer's own root layer takes on its disk, beside a host-directory computer's disk
    const allocated = (m: ComputerManager) => {
      const g = `g${m.computer!.generation}`;
      const img = join(dir, 'computers', g, 'disk.img');
      return statSync(img).blocks * 512;
    };
    figures.push({
      name: "a booted computer's disk on the image (its root layer included)",
      value: allocated(image) / 1024,
      unit: 'KiB',
      target: 'a few MiB at most',
      peers: [{ name: "a booted computer's disk on the host's directories", value: allocated(host) / 1024 }],
    });
    await image.stop(stop);
    await host.stop(stop);
    const warm: number[] = [];
    const cold: number[] = [];
    for (let i = 0; i < RUNS; i++) {
      while (s.pool.ready('debwarm') < 1) await new Promise((r) => setTimeout(r, 5));
      const m = s.byKey(`private:bench-warm-${i}`);
      warm.push(await launchTimed(m, 'debwarm', 'warm'));
      await m.stop(stop);
      const c = s.byKey(`private:bench-cold-${i}`);
      cold.push(await launchTimed(c, 'deb', 'cold'));
      await c.stop(stop);
    }
    figures.push({
      name: `launch_computer → running on the Debian image, warm sandbox ready (median of ${RUNS})`,
      value: median(warm),
      unit: 'ms',
      target: '≤ 30 ms',
      peers: [{ name: 'the same launch booting cold', value: median(cold) }],
    });
  } finally {
    await s.close();
    rmSync(dir, { recursive: true, force: true });
  }
  return figures;
}
