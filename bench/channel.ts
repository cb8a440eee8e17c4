import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { loadConfig } from '../src/config/load.js';
import { createPaddock } from '../src/main.js';
import { silentLogger } from '../src/shared/logger.js';
import { OWNER } from '../src/shared/principal.js';
import type { CallerContext } from '../src/tools/tool.js';
import { REPO_ROOT, startServe, tempProject } from '../test/helpers/paddock-process.js';
import type { Figure } from './run.js';
import { median } from './stats.js';

const NOOP_PLUGIN = `import { defineTool, z } from '${pathToFileURL(join(REPO_ROOT, 'dist', 'src', 'plugin.js')).href}';
export const noop = defineTool({ name: 'noop', description: 'Does nothing (benchmark).', input: z.object({}), execute: async () => ({ ok: true }) });
`;

const PY = `
import time, json, paddock_tool
t = []
for _ in range(100):
    s = time.perf_counter(); paddock_tool.call_tool("noop", {}); t.append((time.perf_counter() - s) * 1000)
print(json.dumps({"times": t, "total": sum(t)}))
`;

function projectWithNoop(): string {
  const dir = mkdtempSync(join(tmpdir(), 'paddock-bench-channel-'));
  mkdirSync(join(dir, '.paddock', 'plugins'), { recursive: true });
  writeFileSync(join(dir, '.paddock', 'plugins', 'noop.mjs'), NOOP_PLUGIN);
  writeFileSync(join(dir, 'paddock.yaml'), 'computer:\n  defaultProfile: python\n');
  return dir;
}

/** Tool calls from inside the computer, beside the same calls made by an MCP client directly. */
export async function benchChannel(): Promise<Figure[]> {
  const dir = projectWithNoop();
  const figures: Figure[] = [];
  const paddock = await createPaddock(loadConfig({ cwd: dir, env: { PADDOCK_DATA: join(dir, 'data') } }), {
    logger: silentLogger(),
  });
  try {
    const caller: CallerContext = { principal: OWNER, caller: 'mcp:bench', via: 'direct', attended: true };
    const run = async (script: string) => {
      const o = await paddock.gateway.call(
        'run_command',
        { script, waitMs: 10_000, timeoutMs: 120_000 },
        caller,
      );
      if (!o.ok) throw new Error(o.error.message);
      return o.result.structured as { stdout: string; stderr: string };
    };
    // A command may make 100 calls: the first command warms up (the server's code paths, the
    // computer's caches), then three commands are measured and their calls pooled.
    const py: { times: number[]; total: number }[] = [];
    for (let i = 0; i < 4; i++) {
      const pyRun = await run(`python3 - <<'PY'\n${PY}\nPY`);
      if (!pyRun.stdout.trim()) throw new Error(`python bench failed: ${pyRun.stderr}`);
      if (i > 0) py.push(JSON.parse(pyRun.stdout) as { times: number[]; total: number });
    }
    figures.push({
      name: 'channel: Python call_tool, no-op (median of 3 × 100 calls)',
      value: median(py.flatMap((r) => r.times)),
      unit: 'ms/call',
      target: '≤ 0.5 ms',
    });
    figures.push({
      name: 'channel: 100 calls from one Python command (median of 3)',
      value: median(py.map((r) => r.total)),
      unit: 'ms',
      target: '≤ 500 ms',
      peers: [],
    });
    // Each sample times 10 calls between two clock reads, so the `date` processes that read the
    // clock (a fork and an exec each, as costly as a call) stay out of the figure.
    const cli = await run(`for i in $(seq 5); do paddock-tool call noop '{}' >/dev/null; done
for r in $(seq 9); do s=$(date +%s%N); for i in 1 2 3 4 5 6 7 8 9 10; do paddock-tool call noop '{}' >/dev/null; done; e=$(date +%s%N); echo $(( (e - s) / 10000 )); done`);
    const micros = cli.stdout.trim().split('\n').map(Number);
    figures.push({
      name: 'channel: paddock-tool call (shell client, median of 9 × 10 calls)',
      value: median(micros) / 1000,
      unit: 'ms/call',
      target: '≤ 10 ms',
    });
  } finally {
    await paddock.close();
  }

  const project = tempProject();
  mkdirSync(join(project.dir, '.paddock', 'plugins'), { recursive: true });
  writeFileSync(join(project.dir, '.paddock', 'plugins', 'noop.mjs'), NOOP_PLUGIN);
  const serve = await startServe(project);
  try {
    const client = new Client({ name: 'bench', version: '1' });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(`${serve.url}/mcp`), {
        requestInit: { headers: { authorization: `Bearer ${serve.token}` } },
      }),
    );
    for (let i = 0; i < 20; i++) await client.callTool({ name: 'noop', arguments: {} });
    const t0 = performance.now();
    for (let i = 0; i < 100; i++) await client.callTool({ name: 'noop', arguments: {} });
    const hundred = figures.find((f) => f.name.startsWith('channel: 100 calls from one Python command'));
    hundred?.peers?.push({
      name: 'the same 100 calls by an MCP client over HTTP',
      value: performance.now() - t0,
    });
    await client.close();
  } finally {
    await serve.stop();
    project.cleanup();
    rmSync(dir, { recursive: true, force: true });
  }
  return figures;
}
