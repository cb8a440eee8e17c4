/**
 * CLI start-up: commands that touch no computer, each a fresh process, beside `node -e 0` (the
 * floor any Node CLI pays) measured in the same run.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PADDOCK_BIN } from '../test/helpers/paddock-process.js';
import type { Figure } from './run.js';
import { median } from './stats.js';

const RUNS = 15;

function timeProcess(args: string[], env: NodeJS.ProcessEnv): number {
  const times: number[] = [];
  for (let i = 0; i < RUNS + 2; i++) {
    const t = performance.now();
    const r = spawnSync(process.execPath, args, { env, stdio: ['ignore', 'ignore', 'pipe'] });
    const ms = performance.now() - t;
    if (r.status !== 0 && r.status !== 1) throw new Error(`${args.join(' ')}: exit ${r.status}: ${r.stderr}`);
    if (i >= 2) times.push(ms);
  }
  return median(times);
}

/** Every CLI figure, with `node -e 0` as the peer of each. */
export async function benchCli(): Promise<Figure[]> {
  const dir = mkdtempSync(join(tmpdir(), 'paddock-bench-cli-'));
  const env: NodeJS.ProcessEnv = { ...process.env, PADDOCK_DATA: join(dir, 'data') };
  delete env.PADDOCK_CONFIG;
  try {
    const floor = timeProcess(['-e', '0'], env);
    const peers = [{ name: '`node -e 0`', value: floor }];
    const commands: [string, string[]][] = [
      ['paddock --help', ['--help']],
      ['paddock policy check file.read /workspace/a', ['policy', 'check', 'file.read', '/workspace/a']],
      ['paddock tools list', ['tools', 'list']],
      ['paddock audit', ['audit']],
    ];
    return commands.map(([name, args]) => ({
      name: `${name} (median of ${RUNS})`,
      value: timeProcess([PADDOCK_BIN, ...args], env),
      unit: 'ms',
      target: '≤ 2× `node -e 0`',
      peers,
    }));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
