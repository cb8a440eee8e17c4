/**
 * Both MCP eras on Paddock's `/mcp` beside the SDK's own minimal server of the same era, in the
 * same run: `get_computer_status` round trip (one client, calls in turn with the peer's no-op)
 * and 16-client throughput (alternating rounds). 2025: sessions (bench/minimal-http-server.ts);
 * 2026-07-28: a request per call with its `_meta` envelope (bench/minimal-http-modern-server.ts).
 */
import { spawn } from 'node:child_process';
import { Agent, request } from 'node:http';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startServe, tempProject } from '../test/helpers/paddock-process.js';
import { RawMcpSession } from './http-load.js';
import type { Figure } from './run.js';
import { median } from './stats.js';

const ENVELOPE = {
  'io.modelcontextprotocol/protocolVersion': '2026-07-28',
  'io.modelcontextprotocol/clientInfo': { name: 'bench', version: '1' },
  'io.modelcontextprotocol/clientCapabilities': {},
};

/** What one bench client does: open, then call one tool many times. */
interface Caller {
  open(): Promise<void>;
  call(name: string, args: Record<string, unknown>): Promise<void>;
}

/** A raw 2026-07-28 client: every call a POST of its own with the envelope, no session. */
class RawModernClient implements Caller {
  private nextId = 1;
  constructor(
    private readonly url: URL,
    private readonly headers: Record<string, string>,
    private readonly agent: Agent,
  ) {}

  async open(): Promise<void> {}

  call(name: string, args: Record<string, unknown>): Promise<void> {
    const body = JSON.stringify({
      jsonrpc: '2.0',
      id: this.nextId++,
      method: 'tools/call',
      params: { name, arguments: args, _meta: ENVELOPE },
    });
    return new Promise((resolve, reject) => {
      const req = request(
        this.url,
        {
          method: 'POST',
          agent: this.agent,
          headers: {
            'content-type': 'application/json',
            accept: 'application/json, text/event-stream',
            'mcp-protocol-version': '2026-07-28',
            'mcp-method': 'tools/call',
            'mcp-name': name,
            'content-length': Buffer.byteLength(body),
            ...this.headers,
          },
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => {
            const text = Buffer.concat(chunks).toString('utf8');
            if (res.statusCode !== 200 || !text.includes('"result"') || text.includes('"isError":true'))
              reject(new Error(`tools/call ${name} failed: ${res.statusCode} ${text.slice(0, 300)}`));
            else resolve();
          });
          res.on('error', reject);
        },
      );
      req.on('error', reject);
      req.end(body);
    });
  }
}

type Era = 'legacy' | 'modern';

function caller(era: Era, url: string, token: string, agent: Agent, computer?: string): Caller {
  const headers: Record<string, string> = { authorization: `Bearer ${token}` };
  if (computer) headers['paddock-computer'] = computer;
  return era === 'modern'
    ? new RawModernClient(new URL(`${url}/mcp`), headers, agent)
    : new RawMcpSession(new URL(`${url}/mcp`), token, agent, headers);
}

/** Calls per second of `clients` concurrent callers for `durationMs`. */
async function rate(callers: Caller[], durationMs: number, call: [string, Record<string, unknown>]) {
  for (const c of callers) await c.call(...call);
  let count = 0;
  const t0 = performance.now();
  const end = t0 + durationMs;
  await Promise.all(
    callers.map(async (c) => {
      while (performance.now() < end) {
        await c.call(...call);
        count++;
      }
    }),
  );
  return count / ((performance.now() - t0) / 1000);
}

const HERE = dirname(fileURLToPath(import.meta.url));

async function startPeer(file: string): Promise<{ url: string; stop(): void }> {
  const child = spawn(process.execPath, [join(HERE, file)], { stdio: ['ignore', 'pipe', 'inherit'] });
  const url = await new Promise<string>((resolve, reject) => {
    let out = '';
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
      const nl = out.indexOf('\n');
      if (nl !== -1) resolve(out.slice(0, nl).trim());
    });
    child.once('exit', (code) => reject(new Error(`${file} exited (${code})`)));
  });
  return { url, stop: () => child.kill() };
}

const PEERS: Record<Era, string> = {
  legacy: 'minimal-http-server.js',
  modern: 'minimal-http-modern-server.js',
};
const LABEL: Record<Era, string> = { legacy: '2025-11-25', modern: '2026-07-28' };

/** The eras suite: round trip and throughput of both eras beside the SDK's minimal servers. */
export async function benchEras(rounds = 3, durationMs = 3000): Promise<Figure[]> {
  const clients = 16;
  const status: [string, Record<string, unknown>] = ['get_computer_status', {}];
  const noop: [string, Record<string, unknown>] = ['noop', {}];
  const project = tempProject('computer:\n  autoLaunch: false\n');
  const figures: Figure[] = [];
  try {
    const serve = await startServe(project);
    const agent = new Agent({ keepAlive: true, maxSockets: clients + 1 });
    try {
      // one running computer that every era's call reads
      const launcher = caller('modern', serve.url, serve.token, agent, 'bench');
      await launcher.call('launch_computer', { profileId: 'shell' });
      for (const era of ['legacy', 'modern'] as const) {
        const peer = await startPeer(PEERS[era]);
        try {
          const one = caller(era, serve.url, serve.token, agent, 'bench');
          const peerOne = caller(era, peer.url, 'unused', agent);
          await one.open();
          await peerOne.open();
          const ours: number[] = [];
          const theirs: number[] = [];
          for (let i = 0; i < 600; i++) {
            const t0 = performance.now();
            await one.call(...status);
            const t1 = performance.now();
            await peerOne.call(...noop);
            const t2 = performance.now();
            if (i >= 100) {
              ours.push(t1 - t0);
              theirs.push(t2 - t1);
            }
          }
          figures.push({
            name: `${LABEL[era]} get_computer_status round trip over HTTP (median)`,
            value: median(ours),
            unit: 'ms/call',
            target: 'reported (ours runs the gateway and writes an audit row)',
            peers: [{ name: `SDK minimal ${LABEL[era]} server, a no-op tool`, value: median(theirs) }],
          });
          const oursRate: number[] = [];
          const theirsRate: number[] = [];
          for (let r = 0; r < rounds; r++) {
            const peerCallers = Array.from({ length: clients }, () => caller(era, peer.url, 'unused', agent));
            await Promise.all(peerCallers.map((c) => c.open()));
            theirsRate.push(await rate(peerCallers, durationMs, noop));
            const ourCallers = Array.from({ length: clients }, () =>
              caller(era, serve.url, serve.token, agent, 'bench'),
            );
            await Promise.all(ourCallers.map((c) => c.open()));
            oursRate.push(await rate(ourCallers, durationMs, status));
          }
          figures.push({
            name: `${LABEL[era]} get_computer_status, ${clients} clients over HTTP (median of ${rounds})`,
            value: median(oursRate),
            unit: 'calls/s',
            target: era === 'modern' ? '≥ 1.0× the SDK minimal server' : '≥ 1.0× the SDK minimal server',
            peers: [{ name: `SDK minimal ${LABEL[era]} server, a no-op tool`, value: median(theirsRate) }],
          });
        } finally {
          peer.stop();
        }
      }
    } finally {
      agent.destroy();
      await serve.stop();
    }
  } finally {
    project.cleanup();
  }
  return figures;
}
