/**
 * Peers of `run_command true`: what it costs to run `true` in a fresh sandbox, with bare bwrap
 * (the spawn floor of a sandbox per command) and with @anthropic-ai/sandbox-runtime (a sandbox per
 * command with its network proxy; needs ripgrep and socat). Paddock's computer is already running,
 * so its figure can be below both.
 */
import { spawn } from 'node:child_process';
import type { Peer } from './run.js';
import { median } from './stats.js';

function exitOf(argv: string[], env?: NodeJS.ProcessEnv): Promise<number | null> {
  return new Promise((resolve, reject) => {
    const child = spawn(argv[0]!, argv.slice(1), { stdio: 'ignore', ...(env ? { env } : {}) });
    child.on('error', reject);
    child.on('exit', (code) => resolve(code));
  });
}

async function timed(n: number, once: () => Promise<number | null>): Promise<number> {
  const times: number[] = [];
  for (let i = 0; i < n + 2; i++) {
    const t = performance.now();
    const code = await once();
    if (code !== 0) throw new Error(`the peer's \`true\` exited with ${code}`);
    if (i >= 2) times.push(performance.now() - t);
  }
  return median(times);
}

/** A bare `bwrap … true` (own namespaces, read-only root), median of `n`. */
export function bwrapTrue(n = 30): Promise<Peer> {
  const argv = [
    'bwrap',
    '--unshare-all',
    '--die-with-parent',
    '--ro-bind',
    '/',
    '/',
    '--dev',
    '/dev',
    'true',
  ];
  return timed(n, () => exitOf(argv)).then((value) => ({ name: 'a bare bwrap spawn of `true`', value }));
}

/** sandbox-runtime 0.0.78: wrap `true` and run it (initialised once, outside the timing). */
export async function sandboxRuntimeTrue(n = 20): Promise<Peer> {
  const { SandboxManager } = await import('@anthropic-ai/sandbox-runtime');
  await SandboxManager.initialize({
    network: { allowedDomains: [], deniedDomains: [] },
    filesystem: { denyRead: [], allowWrite: ['/tmp'], denyWrite: [] },
  });
  try {
    const value = await timed(n, async () => {
      const { argv, env } = await SandboxManager.wrapWithSandboxArgv('true');
      return exitOf(argv, env);
    });
    return { name: 'sandbox-runtime 0.0.78 running `true`', value };
  } finally {
    await SandboxManager.reset();
  }
}
