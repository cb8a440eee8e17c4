import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import {
  PADDOCK_BIN,
  runCli,
  startServe,
  type TempProject,
  tempProject,
} from '../test/helpers/paddock-process.js';
import type { Figure } from './run.js';
import { median } from './stats.js';

const MINIMAL = join(dirname(fileURLToPath(import.meta.url)), 'minimal-stdio-server.js');

/** Milliseconds from spawning a stdio server to the end of the SDK client's initialize handshake. */
async function handshakeMs(args: string[], project: TempProject): Promise<number> {
  const client = new Client({ name: 'bench', version: '1.0.0' });
  const start = performance.now();
  await client.connect(
    new StdioClientTransport({
      command: process.execPath,
      args,
      cwd: project.dir,
      env: project.env as Record<string, string>,
      stderr: 'ignore',
    }),
  );
  const ms = performance.now() - start;
  await client.close();
  return ms;
}

/**
 * The stdio bridge's handshake (`paddock mcp` → initialize answered) beside the SDK's minimal
 * stdio server, measured alternately in the same run so both see the same machine load: with
 * the server already running, and from cold (no server: the bridge starts one).
 */
export async function benchBridge(rounds = 15, coldRounds = 3): Promise<Figure[]> {
  const project = tempProject();
  try {
    const serve = await startServe(project);
    const warm: number[] = [];
    const peer: number[] = [];
    try {
      await handshakeMs([PADDOCK_BIN, 'mcp'], project);
      await handshakeMs([MINIMAL], project);
      for (let i = 0; i < rounds; i++) {
        warm.push(await handshakeMs([PADDOCK_BIN, 'mcp'], project));
        peer.push(await handshakeMs([MINIMAL], project));
      }
    } finally {
      await serve.stop();
    }
    const cold: number[] = [];
    const coldPeer: number[] = [];
    for (let i = 0; i < coldRounds; i++) {
      cold.push(await handshakeMs([PADDOCK_BIN, 'mcp'], project));
      coldPeer.push(await handshakeMs([MINIMAL], project));
      await runCli(project, ['stop']);
    }
    return [
      {
        name: 'stdio handshake: paddock mcp bridge, server running (median)',
        value: median(warm),
        unit: 'ms',
        target: '≤ 1.2 × the SDK minimal stdio server',
        peers: [{ name: 'SDK minimal stdio server', value: median(peer) }],
      },
      {
        name: 'stdio handshake: paddock mcp bridge, cold start (median)',
        value: median(cold),
        unit: 'ms',
        target: 'reported (includes starting the server)',
        peers: [{ name: 'SDK minimal stdio server', value: median(coldPeer) }],
      },
    ];
  } finally {
    project.cleanup();
  }
}
