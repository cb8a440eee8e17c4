/**
 * The warm pool: `launch_computer` → `running` when a warm sandbox is ready, beside the same
 * launch booting cold, both in this run and on the same machine. A first launch is a computer
 * that never ran (a new session); a relaunch replaces the computer's running generation. Each
 * launch waits for the pool to be full first, so a warm launch always finds a sandbox. Needs
 * root-capable bwrap like the integration tests.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BwrapBackend } from '../src/computer/backend/bwrap/backend.js';
import type { ComputerManager } from '../src/computer/manager.js';
import { ComputerService } from '../src/computer/service.js';
import { computerSchema } from '../src/config/computer-schema.js';
import { PaddockError } from '../src/shared/errors.js';
import { silentLogger } from '../src/shared/logger.js';
import type { Figure } from './run.js';
import { median } from './stats.js';

const RUNS = 15;

function service(dataDir: string, warm: number): ComputerService {
  const logger = silentLogger();
  return new ComputerService({
    backend: new BwrapBackend({ logger }),
    config: computerSchema.parse({ autoLaunch: false, idleTimeoutMs: 0, warm: { shell: warm } }),
    dataDir,
    dockUrl: 'http://127.0.0.1:7331',
    logger,
  });
}

async function poolFull(s: ComputerService, warm: number): Promise<void> {
  while (s.pool.ready('shell') < warm) await new Promise((r) => setTimeout(r, 5));
}

/** launch → running on `m`, in ms; throws when the boot failed or did not use the expected source. */
async function launchTimed(m: ComputerManager, source: 'warm' | 'cold'): Promise<number> {
  const t = performance.now();
  m.launch('shell');
  const c = m.computer!;
  await c.booted;
  const ms = performance.now() - t;
  if (c.lifecycle !== 'running') throw new Error(`boot failed: ${c.bootError}`);
  if (c.bootSource !== source) throw new Error(`expected a ${source} boot, got ${c.bootSource}`);
  return ms;
}

async function measure(warm: number): Promise<{ first: number[]; relaunch: number[] }> {
  const dir = mkdtempSync(join(tmpdir(), 'paddock-bench-warm-'));
  const s = service(dir, warm);
  const source = warm > 0 ? 'warm' : 'cold';
  const stop = new PaddockError('NOT_RUNNING', 'bench');
  try {
    const first: number[] = [];
    for (let i = 0; i < RUNS; i++) {
      await poolFull(s, warm);
      const m = s.byKey(`private:bench-${i}`);
      first.push(await launchTimed(m, source));
      await m.stop(stop);
    }
    const relaunch: number[] = [];
    const m = s.byKey('private:bench-relaunch');
    await poolFull(s, warm);
    await launchTimed(m, source);
    for (let i = 0; i < RUNS; i++) {
      await poolFull(s, warm);
      relaunch.push(await launchTimed(m, source));
    }
    return { first, relaunch };
  } finally {
    await s.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

export async function benchWarmPool(): Promise<Figure[]> {
  const cold = await measure(0);
  const warm = await measure(1);
  return [
    {
      name: `launch_computer → running, first launch, warm sandbox ready (median of ${RUNS})`,
      value: median(warm.first),
      unit: 'ms',
      target: '≤ 30 ms',
      peers: [{ name: 'the same launch booting cold', value: median(cold.first) }],
    },
    {
      name: `launch_computer → running, relaunch, warm sandbox ready (median of ${RUNS})`,
      value: median(warm.relaunch),
      unit: 'ms',
      target: '≤ 30 ms',
      peers: [{ name: 'the same relaunch booting cold', value: median(cold.relaunch) }],
    },
  ];
}
