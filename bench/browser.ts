/**
 * The browser computer beside the bwrap computer, in one run: launch → running (for the browser
 * computer: from opening its page in Chromium until the guest agent answers) and the round trip of
 * run_command `true`. The browser computer is an emulated PC in a page, so expect seconds where
 * bwrap takes milliseconds; docs/browser-computer.md discusses the figures.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { BrowserVmLink } from '../src/computer/backend/browser/agent-line.js';
import {
  BrowserBackend,
  type BrowserHosts,
  withBrowserBackend,
} from '../src/computer/backend/browser/backend.js';
import { BrowserImage, type ImageCheck } from '../src/computer/backend/browser/image.js';
import { BwrapBackend } from '../src/computer/backend/bwrap/backend.js';
import { ComputerManager } from '../src/computer/manager.js';
import { createComputerTools } from '../src/computer/tools/index.js';
import { computerSchema } from '../src/config/computer-schema.js';
import { PaddockError } from '../src/shared/errors.js';
import { silentLogger } from '../src/shared/logger.js';
import { bootVmPage, type VmPage } from '../test/helpers/browser-vm-page.js';
import { toolContext } from './computer.js';
import type { Figure } from './run.js';
import { median, timeCalls } from './stats.js';

const BOOTS = 2;

/** launch → running of `profile` on `m`, in ms (from `t0` when given). */
async function launchTimed(m: ComputerManager, profile: string, t0 = performance.now()): Promise<number> {
  m.launch(profile);
  await m.computer!.booted;
  if (m.computer!.lifecycle !== 'running') throw new Error(`boot failed: ${m.computer!.bootError}`);
  return performance.now() - t0;
}

async function roundTrip(m: ComputerManager, calls: number): Promise<number> {
  const run = createComputerTools(m).find((t) => t.name === 'run_command')!;
  const ctx = toolContext();
  return median(await timeCalls(calls, () => run.execute({ script: 'true', waitMs: 10_000 }, ctx), 2));
}

/** write_file of 64 KiB of text, median. */
async function writeTrip(m: ComputerManager, calls: number): Promise<number> {
  const write = createComputerTools(m).find((t) => t.name === 'write_file')!;
  const ctx = toolContext();
  const content = 'x'.repeat(65_536);
  const args = { path: '/workspace/bench-write.txt', content, overwrite: true };
  return median(await timeCalls(calls, () => write.execute(args, ctx), 1));
}

/** The same image with its snapshot ignored: the backend expects a cold boot. */
class ColdImage extends BrowserImage {
  override check(): ImageCheck {
    const c = super.check();
    return c.ok ? { ...c, state: null } : c;
  }
}

export async function benchBrowser(): Promise<Figure[]> {
  const image = new BrowserImage();
  const checked = image.check();
  if (!checked.ok) throw new Error(checked.reason);
  const dir = mkdtempSync(join(tmpdir(), 'paddock-bench-browser-'));
  const logger = silentLogger();
  let page: VmPage | null = null;
  const hosts: BrowserHosts = {
    unavailable: () => (page ? null : 'no page'),
    claim: (): BrowserVmLink => page!.link,
  };
  const manager = (backendImage: BrowserImage) =>
    new ComputerManager({
      backend: withBrowserBackend(new BwrapBackend({ logger }), new BrowserBackend(hosts, backendImage)),
      config: computerSchema.parse({
        autoLaunch: false,
        profiles: [{ id: 'tab', name: 'Tab', backend: 'browser' }],
      }),
      dataDir: dir,
      dockUrl: 'http://127.0.0.1:7331',
      logger,
    });
  // restored from the image's snapshot (when it has one), then booted cold, then bwrap
  const modes = checked.state ? (['restore', 'cold'] as const) : (['cold'] as const);
  const boots: Record<string, number[]> = { restore: [], cold: [] };
  let browserTrip = 0;
  let browserWrite = 0;
  let m: ComputerManager | null = null;
  const stop = new PaddockError('NOT_RUNNING', 'bench');
  try {
    for (const mode of modes) {
      m = manager(mode === 'restore' ? image : new ColdImage(image.dir));
      for (let i = 0; i < BOOTS; i++) {
        const t0 = performance.now();
        page = await bootVmPage(image, mode === 'restore');
        boots[mode]!.push(await launchTimed(m, 'tab', t0));
        if (i === 0 && mode === modes[0]) {
          browserTrip = await roundTrip(m, 10);
          browserWrite = await writeTrip(m, 3);
        }
        await m.stop(stop);
        await page.close();
        page = null;
      }
      await m.close();
      m = null;
    }
    m = manager(image);
    const bwrapBoots: number[] = [];
    for (let i = 0; i < 5; i++) bwrapBoots.push(await launchTimed(m, 'shell'));
    const bwrapTrip = await roundTrip(m, 30);
    const bwrapWrite = await writeTrip(m, 30);
    const bwrapBoot = { name: 'bwrap launch → running', value: median(bwrapBoots) };
    const figures: Figure[] = modes.map((mode) => ({
      name:
        mode === 'restore'
          ? `browser computer: page opened → running, snapshot restored (median of ${BOOTS})`
          : `browser computer: page opened → running, cold boot (median of ${BOOTS})`,
      value: median(boots[mode]!),
      unit: 'ms',
      target:
        mode === 'restore' ? 'seconds (restoring a booted machine)' : 'reported (an emulated PC boots Linux)',
      peers: [bwrapBoot],
    }));
    figures.push({
      name: 'browser computer: run_command `true` round trip (median of 10)',
      value: browserTrip,
      unit: 'ms/call',
      target: 'under a second',
      peers: [{ name: 'bwrap run_command `true`', value: bwrapTrip }],
    });
    figures.push({
      name: 'browser computer: write_file 64 KiB (median of 3)',
      value: browserWrite,
      unit: 'ms/call',
      target: 'seconds (three chunks through the serial port)',
      peers: [{ name: 'bwrap write_file 64 KiB', value: bwrapWrite }],
    });
    return figures;
  } finally {
    await m?.close();
    await page?.close();
    rmSync(dir, { recursive: true, force: true });
  }
}
