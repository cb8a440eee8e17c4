/**
 * Benchmarks of the computer: launch → running, run_command round trips, job output
 * throughput, and a 64 KiB read_file beside @modelcontextprotocol/server-filesystem reading the
 * same file over MCP stdio. Needs root-capable bwrap like the integration tests.
 *
 * `node dist/bench/computer.js` prints the figures; `--serve-mcp <dataDir>` runs the MCP stdio
 * server the benchmark talks to (the computer tools behind the real gateway). Importing this
 * module has no side effects.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { BwrapBackend } from '../src/computer/backend/bwrap/backend.js';
import { ComputerManager } from '../src/computer/manager.js';
import { createComputerTools } from '../src/computer/tools/index.js';
import { computerSchema } from '../src/config/computer-schema.js';
import { policySchema } from '../src/config/schema.js';
import { createWhitelistSandbox } from '../src/policy/index.js';
import { silentLogger } from '../src/shared/logger.js';
import { OWNER } from '../src/shared/principal.js';
import { SqliteAuditStore } from '../src/store/sqlite/audit-store.js';
import { openDatabase } from '../src/store/sqlite/database.js';
import type { Tool, ToolContext } from '../src/tools/tool.js';
import type { Figure } from './run.js';
import { bwrapTrue, sandboxRuntimeTrue } from './sandbox-peers.js';
import { median, timeAlternately, timeCalls } from './stats.js';

const SELF = fileURLToPath(import.meta.url);
const FILE_BYTES = 65_536;
const THROUGHPUT_BYTES = 512 * 1024 * 1024;

function manager(dataDir: string, useDiskImages = true): ComputerManager {
  const logger = silentLogger();
  return new ComputerManager({
    backend: new BwrapBackend({ logger, useDiskImages }),
    config: computerSchema.parse({}),
    dataDir,
    dockUrl: 'http://127.0.0.1:7331',
    logger,
  });
}

/** A tool context for benchmarks: the real default policy, no audit, an hour of deadline. */
export function toolContext(): ToolContext {
  return {
    invocationId: 'bench',
    caller: { principal: OWNER, caller: 'bench', via: 'direct', attended: true },
    signal: new AbortController().signal,
    deadline: Date.now() + 3_600_000,
    policy: createWhitelistSandbox(policySchema.parse({})),
    logger: silentLogger(),
    notePolicyRule: () => undefined,
    noteComputer: () => undefined,
    progress: () => undefined,
  };
}

async function launchTimed(m: ComputerManager, profile = 'shell'): Promise<number> {
  const t = performance.now();
  m.launch(profile);
  await m.computer!.booted;
  if (m.computer!.lifecycle !== 'running') throw new Error(`boot failed: ${m.computer!.bootError}`);
  return performance.now() - t;
}

/** The in-process figures. */
async function inProcess(figures: Figure[]): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'paddock-bench-computer-'));
  const m = manager(dir);
  // the same launches with a plain workspace directory: what the computer's own disk costs
  const plainDir = mkdtempSync(join(tmpdir(), 'paddock-bench-computer-plain-'));
  const plain = manager(plainDir, false);
  try {
    const [launches, plainLaunches] = await timeAlternately(
      9,
      () => launchTimed(m),
      () => launchTimed(plain),
      1,
    );
    figures.push({
      name: 'launch_computer → running (median of 9)',
      value: median(launches),
      unit: 'ms',
      target: '≤ 150 ms (E2B ~150 ms)',
      ...(m.computer?.instance?.diskQuota?.enforced
        ? { peers: [{ name: 'the same launch without a disk of its own', value: median(plainLaunches) }] }
        : {}),
    });

    const tools = new Map(createComputerTools(m).map((t) => [t.name, t]));
    const ctx = toolContext();
    const run = tools.get('run_command')!;
    const trueTimes = await timeCalls(100, () => run.execute({ script: 'true', waitMs: 10_000 }, ctx), 10);
    figures.push({
      name: 'run_command `true`, in-process (median)',
      value: median(trueTimes),
      unit: 'ms/call',
      target: '≤ 15 ms over MCP',
    });

    const t = performance.now();
    const job = await m.runCommand({
      script: `head -c ${THROUGHPUT_BYTES} /dev/zero`,
      waitMs: 0,
      timeoutMs: 300_000,
    });
    const { job: running } = m.resolveJob(job.jobId);
    await running.waitForExit(300_000);
    while (!running.outputEnded) await new Promise((r) => setTimeout(r, 1));
    const seconds = (performance.now() - t) / 1000;
    figures.push({
      name: 'job output through the pipeline',
      value: running.stdout.endOffset / 1e6 / seconds,
      unit: 'MB/s',
      target: '≥ 200 MB/s',
    });

    await run.execute(
      {
        script: `head -c ${FILE_BYTES} /dev/urandom | base64 -w0 | head -c ${FILE_BYTES} > /workspace/bench.txt`,
        waitMs: 10_000,
      },
      ctx,
    );
    const read = tools.get('read_file')!;
    const readTimes = await timeCalls(
      200,
      () => read.execute({ path: '/workspace/bench.txt', byteLimit: FILE_BYTES }, ctx),
      20,
    );
    figures.push({
      name: 'read_file 64 KiB, in-process (median)',
      value: median(readTimes),
      unit: 'ms/call',
      target: '—',
    });
  } finally {
    await m.close();
    await plain.close().catch(() => undefined);
    rmSync(dir, { recursive: true, force: true });
    rmSync(plainDir, { recursive: true, force: true });
  }
}

async function connect(command: string, args: string[]): Promise<Client> {
  const client = new Client({ name: 'bench', version: '1' });
  await client.connect(new StdioClientTransport({ command, args, stderr: 'ignore' }));
  return client;
}

/** The MCP stdio figures: our tools behind the gateway, and the reference filesystem server. */
async function overMcp(figures: Figure[]): Promise<void> {
  const dataDir = mkdtempSync(join(tmpdir(), 'paddock-bench-mcp-'));
  let ours: Client | null = null;
  let peer: Client | null = null;
  try {
    ours = await connect(process.execPath, [SELF, '--serve-mcp', dataDir]);
    const client = ours;
    const call = async (name: string, args: Record<string, unknown>) => {
      const r = (await client.callTool({ name, arguments: args })) as {
        isError?: boolean;
        content?: unknown;
      };
      if (r.isError) throw new Error(`${name} failed: ${JSON.stringify(r.content)}`);
      return r;
    };
    await call('launch_computer', { profileId: 'shell' });
    for (let i = 0; i < 500; i++) {
      const s = (await call('get_computer_status', {})) as { structuredContent?: { lifecycle?: string } };
      if (s.structuredContent?.lifecycle === 'running') break;
      await new Promise((r) => setTimeout(r, 10));
    }
    await call('run_command', {
      script: `head -c ${FILE_BYTES} /dev/urandom | base64 -w0 | head -c ${FILE_BYTES} > /workspace/bench.txt`,
      waitMs: 10_000,
    });
    const trueTimes = await timeCalls(200, () => call('run_command', { script: 'true', waitMs: 10_000 }), 20);
    const runPeers = [await bwrapTrue()];
    try {
      runPeers.push(await sandboxRuntimeTrue());
    } catch (e) {
      process.stderr.write(`bench: sandbox-runtime peer unavailable (${(e as Error).message})\n`);
    }
    figures.push({
      name: 'run_command `true` over MCP stdio (median)',
      value: median(trueTimes),
      unit: 'ms/call',
      target: '≤ 8 ms',
      peers: runPeers,
    });
    const [statusTimes, noopTimes] = await timeAlternately(
      500,
      () => call('get_computer_status', {}),
      () => call('bench_noop', {}),
      50,
    );
    figures.push({
      name: 'get_computer_status over MCP stdio (median)',
      value: median(statusTimes),
      unit: 'ms/call',
      target: '≤ 1.1× a no-op tool',
      peers: [{ name: 'a no-op tool, same server', value: median(noopTimes) }],
    });
    // The server says where the workspace is on the host: a dedicated sandbox uid (Paddock run
    // as root) keeps it outside the data directory.
    const where = (await call('bench_where', {})) as { structuredContent?: { hostWorkspace?: string } };
    const workspace = where.structuredContent?.hostWorkspace;
    if (!workspace) throw new Error(`bench_where gave no workspace: ${JSON.stringify(where)}`);
    const hostFile = join(workspace, 'bench.txt');
    if (!existsSync(hostFile)) throw new Error(`expected the benchmark file at ${hostFile}`);
    if (readFileSync(hostFile).length !== FILE_BYTES)
      throw new Error(`${hostFile} is not ${FILE_BYTES} bytes`);
    const require = createRequire(import.meta.url);
    const serverFs = require.resolve('@modelcontextprotocol/server-filesystem/dist/index.js');
    peer = await connect(process.execPath, [serverFs, workspace]);
    const p = peer;
    // ours and the peer in turn, call by call, so both see the same machine load
    const [readTimes, peerRead] = await timeAlternately(
      300,
      () => call('read_file', { path: '/workspace/bench.txt', byteLimit: FILE_BYTES }),
      () => p.callTool({ name: 'read_text_file', arguments: { path: hostFile } }),
      30,
    );
    // every write new content, as a real agent's would be (the audit keeps each new input once)
    let writes = 0;
    const content = () => `${String(writes++).padStart(8, '0')}${'x'.repeat(FILE_BYTES - 8)}`;
    const [writeTimes, peerWrite] = await timeAlternately(
      200,
      () => call('write_file', { path: '/workspace/bench-write.txt', content: content(), overwrite: true }),
      () =>
        p.callTool({
          name: 'write_file',
          arguments: { path: join(workspace, 'peer-write.txt'), content: content() },
        }),
      20,
    );
    figures.push({
      name: 'read_file 64 KiB over MCP stdio (median)',
      value: median(readTimes),
      unit: 'ms/call',
      target: '≤ 0.8× server-filesystem',
      peers: [{ name: 'server-filesystem read_text_file', value: median(peerRead) }],
    });
    figures.push({
      name: 'write_file 64 KiB over MCP stdio (median)',
      value: median(writeTimes),
      unit: 'ms/call',
      target: '≤ 1.0× server-filesystem',
      peers: [{ name: 'server-filesystem write_file', value: median(peerWrite) }],
    });
  } finally {
    await ours?.close().catch(() => undefined);
    await peer?.close().catch(() => undefined);
    rmSync(dataDir, { recursive: true, force: true });
  }
}

/** Every computer figure, measured in one run. */
export async function benchComputer(): Promise<Figure[]> {
  const figures: Figure[] = [];
  await inProcess(figures);
  await overMcp(figures);
  return figures;
}

/** Tools only the bench server has: where the workspace is on the host, and a no-op peer. */
function benchTools(m: ComputerManager): Tool[] {
  const base = {
    inputSchema: { type: 'object', properties: {}, additionalProperties: false },
    annotations: { readOnlyHint: true },
    source: 'builtin' as const,
    toolsets: ['builtin'],
  };
  return [
    {
      ...base,
      name: 'bench_where',
      description: 'The host path of the current computer workspace (benchmark).',
      execute: async () => ({ structured: { hostWorkspace: m.computer?.hostWorkspace ?? null } }),
    },
    {
      ...base,
      name: 'bench_noop',
      description: 'Does nothing (benchmark).',
      execute: async () => ({ structured: {} }),
    },
  ];
}

/** The MCP stdio server of the benchmark: the computer tools behind the real gateway. */
async function serveMcp(dataDir: string): Promise<void> {
  const [
    { StdioServerTransport },
    { createMcpServer },
    { Gateway },
    { PermissionPolicy },
    { ToolRegistry },
    { InputValidator },
  ] = await Promise.all([
    import('@modelcontextprotocol/server/stdio'),
    import('../src/mcp/server.js'),
    import('../src/tools/gateway.js'),
    import('../src/tools/permissions.js'),
    import('../src/tools/registry.js'),
    import('../src/tools/validation.js'),
  ]);
  const db = openDatabase(join(dataDir, 'paddock.db'));
  const m = manager(dataDir);
  const registry = new ToolRegistry();
  registry.register([...createComputerTools(m), ...benchTools(m)]);
  const gateway = new Gateway({
    registry,
    audit: new SqliteAuditStore(db),
    policy: createWhitelistSandbox(policySchema.parse({})),
    permissions: new PermissionPolicy([{ pattern: '*', permission: 'auto', origin: 'bench' }]),
    validator: new InputValidator(),
    logger: silentLogger(),
  });
  const { server } = createMcpServer({ gateway, registry, version: 'bench' }, () => ({
    principal: OWNER,
    caller: 'mcp:bench',
    via: 'direct',
    attended: true,
  }));
  const transport = new StdioServerTransport();
  const stop = async () => {
    await m.close();
    db.close();
    process.exit(0);
  };
  transport.onclose = () => void stop();
  process.stdin.on('end', () => void stop());
  await server.connect(transport);
}

if (process.argv[1] && pathToFileURL(process.argv[1]).href === import.meta.url) {
  if (process.argv[2] === '--serve-mcp') {
    await serveMcp(process.argv[3]!);
  } else {
    for (const f of await benchComputer())
      process.stdout.write(
        `${f.name.padEnd(52)} ${f.value.toFixed(3).padStart(12)} ${f.unit.padEnd(8)} ${f.target}\n`,
      );
  }
}
