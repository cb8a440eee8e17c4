import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { McpServerConfig } from '../src/integrations/load-config.js';
import { IntegrationsService } from '../src/integrations/service.js';
import { judge } from '../src/integrations/tool-pins.js';
import { PaddockError } from '../src/shared/errors.js';
import { silentLogger } from '../src/shared/logger.js';
import { OWNER } from '../src/shared/principal.js';
import { openDatabase } from '../src/store/sqlite/database.js';
import { SqliteToolPinStore } from '../src/store/sqlite/tool-pin-store.js';
import type { ToolContext } from '../src/tools/tool.js';
import { median, percentile } from './stats.js';

/** One measured figure, printed beside its target (the shape bench/run.ts prints). */
export interface BenchResult {
  name: string;
  value: number;
  unit: string;
  /** What the value should meet, or `(reported)`. */
  target: string;
  /** The same work done otherwise, measured in the same run. */
  peers?: { name: string; value: number }[];
}

function everythingBin(): string {
  const manifest = createRequire(import.meta.url).resolve(
    '@modelcontextprotocol/server-everything/package.json',
  );
  const { bin } = JSON.parse(readFileSync(manifest, 'utf8')) as { bin: Record<string, string> };
  return join(dirname(manifest), Object.values(bin)[0]!);
}

const round = (ms: number) => Math.round(ms * 1000) / 1000;

/**
 * Overhead of Paddock's upstream path on `everything_echo` (server-everything over stdio):
 * the registry Tool's `execute` (pool → SDK client → server) against the same SDK client
 * calling the same server directly, interleaved in one run so both see the same conditions.
 * Also reports how long `start()` takes to return and how long until the server is ready.
 */
export async function benchIntegrations(
  options: { iterations?: number; warmup?: number } = {},
): Promise<BenchResult[]> {
  const iterations = options.iterations ?? 400;
  const warmup = options.warmup ?? 50;
  const config: McpServerConfig = {
    name: 'everything',
    prefix: 'everything',
    transport: 'stdio',
    command: process.execPath,
    args: [everythingBin(), 'stdio'],
    env: {},
    enabled: true,
    timeoutMs: 20_000,
    permissions: {},
    toolsets: [],
    startup: 'eager',
  };
  const service = new IntegrationsService({ servers: [config], logger: silentLogger() });
  try {
    const t0 = performance.now();
    await service.start();
    const startMs = performance.now() - t0;
    await service.discovered();
    const readyMs = performance.now() - t0;
    const echo = service.tools().find((t) => t.name === 'everything_echo');
    const client = service.pool.connectedClient('everything');
    if (!echo || !client)
      throw new Error(`server-everything did not start: ${service.servers()[0]?.lastError}`);

    const controller = new AbortController();
    const ctx: ToolContext = {
      invocationId: 'inv_bench',
      caller: { principal: OWNER, caller: 'cli', via: 'direct', attended: true },
      signal: controller.signal,
      deadline: Date.now() + 3_600_000,
      policy: {
        check: () => ({ allow: false, rule: 'bench', reason: 'unused' }),
        enforce: async () => {
          throw new PaddockError('POLICY_DENIED', 'unused');
        },
        fileScope: (kind) => ({ kind, sets: [{ allow: [], deny: [] }] }),
        sanitizeEnv: (env) => env,
      },
      logger: silentLogger(),
      notePolicyRule() {},
      noteComputer() {},
      progress() {},
    };
    const input = { message: 'bench' };
    const proxied = async () => {
      const s = performance.now();
      await echo.execute(input, ctx);
      return performance.now() - s;
    };
    const direct = async () => {
      const s = performance.now();
      await client.callTool({ name: 'echo', arguments: input });
      return performance.now() - s;
    };
    for (let i = 0; i < warmup; i++) {
      await proxied();
      await direct();
    }
    const p: number[] = [];
    const d: number[] = [];
    const diff: number[] = [];
    for (let i = 0; i < iterations; i++) {
      // alternate which path goes first so neither always runs on a warmer server
      let a: number;
      let b: number;
      if (i % 2 === 0) {
        a = await proxied();
        b = await direct();
      } else {
        b = await direct();
        a = await proxied();
      }
      p.push(a);
      d.push(b);
      diff.push(a - b);
    }
    const pinning = await pinnedFigures(config, ctx, input, iterations, warmup);
    return [
      ...pinning,
      { name: 'integrations.start_returns', value: round(startMs), unit: 'ms', target: '(reported)' },
      { name: 'integrations.eager_server_ready', value: round(readyMs), unit: 'ms', target: '(reported)' },
      { name: 'integrations.echo.direct.median', value: round(median(d)), unit: 'ms', target: '(reported)' },
      { name: 'integrations.echo.proxied.median', value: round(median(p)), unit: 'ms', target: '(reported)' },
      {
        name: 'integrations.echo.overhead.median',
        value: round(median(diff)),
        unit: 'ms',
        target: '≤ 1 ms',
      },
      {
        name: 'integrations.echo.overhead.p95',
        value: round(percentile(diff, 95)),
        unit: 'ms',
        target: '(reported)',
      },
    ];
  } finally {
    await service.close();
  }
}

/**
 * What pinning costs: an upstream call through a service whose tools are pinned (SQLite pin
 * store) beside one without pins, alternately against two server-everything processes; and
 * judging a listing against its pins (done per listing, never per call).
 */
async function pinnedFigures(
  config: McpServerConfig,
  ctx: ToolContext,
  input: Record<string, unknown>,
  iterations: number,
  warmup: number,
): Promise<BenchResult[]> {
  const db = openDatabase(':memory:');
  const store = new SqliteToolPinStore(db);
  const pinned = new IntegrationsService({ servers: [config], logger: silentLogger(), pins: { store } });
  const plain = new IntegrationsService({ servers: [config], logger: silentLogger() });
  try {
    await Promise.all([pinned.start(), plain.start()]);
    await Promise.all([pinned.discovered(), plain.discovered()]);
    const a = pinned.tools().find((t) => t.name === 'everything_echo');
    const b = plain.tools().find((t) => t.name === 'everything_echo');
    if (!a || !b) throw new Error('server-everything did not start twice');
    const time = async (tool: typeof a) => {
      const s = performance.now();
      await tool.execute(input, ctx);
      return performance.now() - s;
    };
    for (let i = 0; i < warmup; i++) await Promise.all([time(a), time(b)]);
    const withPins: number[] = [];
    const withoutPins: number[] = [];
    for (let i = 0; i < iterations; i++) {
      if (i % 2 === 0) {
        withPins.push(await time(a));
        withoutPins.push(await time(b));
      } else {
        withoutPins.push(await time(b));
        withPins.push(await time(a));
      }
    }
    const defs = pinned.pool.knownTools('everything') ?? [];
    const pins = await store.list('everything');
    const judging: number[] = [];
    for (let i = 0; i < 2000; i++) {
      const s = performance.now();
      judge('everything', defs, pins);
      judging.push(performance.now() - s);
    }
    return [
      {
        name: 'upstream call (everything_echo) with its tools pinned, median',
        value: round(median(withPins)),
        unit: 'ms',
        target: 'pins cost nothing per call',
        peers: [{ name: 'the same call without pins', value: round(median(withoutPins)) }],
      },
      {
        name: `judging a listing of ${defs.length} tools against their pins, median`,
        value: round(median(judging) * 1000),
        unit: 'µs/listing',
        target: '(per listing, not per call)',
      },
    ];
  } finally {
    await Promise.all([pinned.close(), plain.close()]);
    db.close();
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const results = await benchIntegrations();
  for (const r of results)
    console.log(`${r.name.padEnd(40)} ${String(r.value).padStart(10)} ${r.unit}  ${r.target}`);
}
