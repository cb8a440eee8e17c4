/**
 * CLI start-up: commands that touch no computer, each a fresh process, beside `node -e 0` (the
 * floor any Node CLI pays) measured in the same run. `tools list` is measured twice: with no
 * server (it builds a Paddock of its own) and with the data directory's server running (it
 * asks the server over the socket, as it does whenever one runs).
 */
import { spawnSync } from 'node:child_process';
import { PADDOCK_BIN, startServe, tempProject } from '../test/helpers/paddock-process.js';
import type { Figure } from './run.js';
import { median } from './stats.js';

const RUNS = 15;

function timeOnce(args: string[], cwd: string, env: NodeJS.ProcessEnv): number {
  const t = performance.now();
  const r = spawnSync(process.execPath, args, { cwd, env, stdio: ['ignore', 'ignore', 'pipe'] });
  const ms = performance.now() - t;
  if (r.status !== 0 && r.status !== 1) throw new Error(`${args.join(' ')}: exit ${r.status}: ${r.stderr}`);
  return ms;
}

/**
 * Median times of a command and of `node -e 0`, run alternately so that both see the same load
 * (the machine is shared): the command's figure carries its own floor as its peer.
 */
function timeBeside(args: string[], cwd: string, env: NodeJS.ProcessEnv): { value: number; floor: number } {
  const times: number[] = [];
  const floors: number[] = [];
  for (let i = 0; i < RUNS + 2; i++) {
    const floor = timeOnce(['-e', '0'], cwd, env);
    const ms = timeOnce(args, cwd, env);
    if (i >= 2) {
      times.push(ms);
      floors.push(floor);
    }
  }
  return { value: median(times), floor: median(floors) };
}

/** Every CLI figure, with `node -e 0` as the peer of each. */
export async function benchCli(): Promise<Figure[]> {
  const project = tempProject();
  const figure = (name: string, args: string[]): Figure => {
    const { value, floor } = timeBeside([PADDOCK_BIN, ...args], project.dir, project.env);
    return {
      name: `${name} (median of ${RUNS})`,
      value,
      unit: 'ms',
      target: '≤ 2× `node -e 0`',
      peers: [{ name: '`node -e 0`, alternated with it', value: floor }],
    };
  };
  try {
    const commands: [string, string[]][] = [
      ['paddock --help', ['--help']],
      ['paddock policy check file.read /workspace/a', ['policy', 'check', 'file.read', '/workspace/a']],
      ['paddock tools list, no server', ['tools', 'list']],
      ['paddock audit', ['audit']],
    ];
    const figures = commands.map(([name, args]) => figure(name, args));
    const serve = await startServe(project);
    try {
      figures.push(figure('paddock tools list, server running', ['tools', 'list']));
    } finally {
      await serve.stop();
    }
    return figures;
  } finally {
    project.cleanup();
  }
}
