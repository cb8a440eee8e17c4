/**
 * MCP over Streamable HTTP under load: 16 sessions of a raw keep-alive client against Paddock's
 * /mcp and against the MCP SDK's minimal HTTP server (minimal-http-server.ts), measured
 * alternately in the same run so both see the same machine load.
 */
import { spawn } from 'node:child_process';
import { Agent, request } from 'node:http';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startServe, tempProject } from '../test/helpers/paddock-process.js';
import type { Figure } from './run.js';
import { median } from './stats.js';

/** A minimal MCP Streamable HTTP client for load: raw keep-alive requests, no SDK on the hot path. */
export class RawMcpSession {
  private sessionId = '';
  private nextId = 1;

  constructor(
    private readonly url: URL,
    private readonly token: string,
    private readonly agent: Agent,
    /** Sent with every request (a Paddock-Computer header, say). */
    private readonly extraHeaders: Record<string, string> = {},
  ) {}

  async open(): Promise<void> {
    const init = await this.post({
      jsonrpc: '2.0',
      id: this.nextId++,
      method: 'initialize',
      params: {
        protocolVersion: '2025-06-18',
        capabilities: {},
        clientInfo: { name: 'bench', version: '1' },
      },
    });
    if (init.status !== 200 || !init.sessionId)
      throw new Error(`initialize failed: ${init.status} ${init.body}`);
    this.sessionId = init.sessionId;
    await this.post({ jsonrpc: '2.0', method: 'notifications/initialized' });
  }

  /** One tools/call; resolves when the whole response has arrived. */
  async call(name: string, args: Record<string, unknown>): Promise<void> {
    const r = await this.post({
      jsonrpc: '2.0',
      id: this.nextId++,
      method: 'tools/call',
      params: { name, arguments: args },
    });
    if (r.status !== 200 || !r.body.includes('"result"'))
      throw new Error(`tools/call failed: ${r.status} ${r.body}`);
  }

  private post(message: unknown): Promise<{ status: number; body: string; sessionId?: string }> {
    const body = JSON.stringify(message);
    return new Promise((resolve, reject) => {
      const req = request(
        this.url,
        {
          method: 'POST',
          agent: this.agent,
          headers: {
            'content-type': 'application/json',
            accept: 'application/json, text/event-stream',
            authorization: `Bearer ${this.token}`,
            ...this.extraHeaders,
            'content-length': Buffer.byteLength(body),
            ...(this.sessionId
              ? { 'mcp-session-id': this.sessionId, 'mcp-protocol-version': '2025-06-18' }
              : {}),
          },
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => {
            const sid = res.headers['mcp-session-id'];
            resolve({
              status: res.statusCode ?? 0,
              body: Buffer.concat(chunks).toString('utf8'),
              ...(typeof sid === 'string' ? { sessionId: sid } : {}),
            });
          });
          res.on('error', reject);
        },
      );
      req.on('error', reject);
      req.end(body);
    });
  }
}

/** Calls per second that `clients` concurrent sessions sustain for `durationMs`. */
export async function httpCallRate(
  url: string,
  token: string,
  clients: number,
  durationMs: number,
  call: { name: string; arguments: Record<string, unknown> },
): Promise<number> {
  const agent = new Agent({ keepAlive: true, maxSockets: clients });
  try {
    const sessions = await Promise.all(
      Array.from({ length: clients }, async () => {
        const s = new RawMcpSession(new URL(`${url}/mcp`), token, agent);
        await s.open();
        return s;
      }),
    );
    for (const s of sessions) await s.call(call.name, call.arguments);
    let count = 0;
    const t0 = performance.now();
    const end = t0 + durationMs;
    await Promise.all(
      sessions.map(async (s) => {
        while (performance.now() < end) {
          await s.call(call.name, call.arguments);
          count++;
        }
      }),
    );
    return count / ((performance.now() - t0) / 1000);
  } finally {
    agent.destroy();
  }
}

const MINIMAL_HTTP = join(dirname(fileURLToPath(import.meta.url)), 'minimal-http-server.js');

/** Starts the SDK's minimal HTTP server; resolves with its URL and a stop function. */
async function startMinimalHttp(): Promise<{ url: string; stop(): void }> {
  const child = spawn(process.execPath, [MINIMAL_HTTP], { stdio: ['ignore', 'pipe', 'inherit'] });
  const url = await new Promise<string>((resolve, reject) => {
    let out = '';
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
      const nl = out.indexOf('\n');
      if (nl !== -1) resolve(out.slice(0, nl).trim());
    });
    child.once('exit', (code) => reject(new Error(`the SDK minimal HTTP server exited (${code})`)));
  });
  return { url, stop: () => child.kill() };
}

/** The HTTP throughput figure beside the SDK's minimal HTTP server, `rounds` alternations. */
export async function benchHttpLoad(rounds = 3, durationMs = 3000): Promise<Figure[]> {
  const clients = 16;
  const call = { name: 'recall_memory', arguments: { query: '', limit: 1 } };
  const project = tempProject();
  try {
    const serve = await startServe(project);
    const peer = await startMinimalHttp();
    const ours: number[] = [];
    const theirs: number[] = [];
    try {
      for (let i = 0; i < rounds; i++) {
        theirs.push(
          await httpCallRate(peer.url, 'unused', clients, durationMs, { name: 'noop', arguments: {} }),
        );
        ours.push(await httpCallRate(serve.url, serve.token, clients, durationMs, call));
      }
    } finally {
      peer.stop();
      await serve.stop();
    }
    return [
      {
        name: `MCP HTTP, ${clients} sessions, recall_memory (raw keep-alive client, median of ${rounds})`,
        value: median(ours),
        unit: 'calls/s',
        target: '≥ 1.5× the SDK minimal HTTP server',
        peers: [{ name: 'SDK minimal HTTP server, a no-op tool', value: median(theirs) }],
      },
    ];
  } finally {
    project.cleanup();
  }
}
