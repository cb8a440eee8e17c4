/**
 * Egress by name, measured in a real bwrap computer against the host doing the same work in the
 * same run: a 50 MB download (curl in the computer by name, with no proxy variable, beside curl
 * on the host from the same loopback server), the set-up of one connection (connect and read the
 * server's first byte, as ssh does; the same Python program in the computer and on the host), and
 * `npm ci` of a small real project's lockfile from a registry mirror this bench serves on loopback
 * from tarballs it packs out of node_modules (an empty cache each time, on both sides). The
 * servers run in a process of their own, so neither side pays for serving the other. Beside the
 * download, the CPU each process on its path spent per MiB (egress-cpu.ts): what bounds it.
 */
import { execFile, execFileSync, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { BwrapBackend } from '../src/computer/backend/bwrap/backend.js';
import { EgressService } from '../src/computer/generation/egress.js';
import type { JobResult } from '../src/computer/jobs/job.js';
import { ComputerManager } from '../src/computer/manager.js';
import { computerSchema } from '../src/config/computer-schema.js';
import { policySchema } from '../src/config/schema.js';
import { DEFAULT_EGRESS_LIMITS } from '../src/net/egress/types.js';
import { createWhitelistSandbox, rulePorts } from '../src/policy/index.js';
import { silentLogger } from '../src/shared/logger.js';
import { OWNER } from '../src/shared/principal.js';
import { SqliteAuditStore } from '../src/store/sqlite/audit-store.js';
import { openDatabase } from '../src/store/sqlite/database.js';
import { SqliteLaunchLinkStore } from '../src/store/sqlite/launch-link-store.js';
import { CpuTally, cpuSeconds, descendantsNamed, ownCpuSeconds, timeOutputSeconds } from './egress-cpu.js';
import type { Figure } from './run.js';

const BIG_BYTES = 50 * 1024 * 1024;
const CONNECTS = 200;
const RUNS = 3;
/** A small real project: its direct dependencies (their own come along). */
const PROJECT_DEPS = ['ajv', 'yaml', 'zod', 'croner', 'ipaddr.js'];
const NO_PROXY = 'unset HTTP_PROXY HTTPS_PROXY ALL_PROXY http_proxy https_proxy all_proxy';
const NPM_FLAGS = ['--no-audit', '--no-fund', '--no-update-notifier', '--ignore-scripts', '--loglevel=error'];

/** Runs a host program without blocking this process. */
const run$ = promisify(execFile);

/** The host's npm with no proxy and no npm_config_* of the caller: both sides read the same settings. */
const npmEnv: NodeJS.ProcessEnv = Object.fromEntries(
  Object.entries(process.env).filter(([k]) => !/^(https?_proxy|all_proxy|npm_config_.*)$/i.test(k)),
);

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}

/**
 * Packs every package the project needs out of node_modules into `dir` as a static registry:
 * `<name>.json` (a packument whose tarball URLs start with @BASE@) and `-/<tarball>`.
 */
function packRegistry(dir: string): void {
  mkdirSync(join(dir, '-'), { recursive: true });
  const done = new Set<string>();
  const pending = [...PROJECT_DEPS];
  while (pending.length > 0) {
    const name = pending.shift()!;
    if (done.has(name)) continue;
    done.add(name);
    const source = join('node_modules', name);
    const manifest = JSON.parse(readFileSync(join(source, 'package.json'), 'utf8')) as {
      version: string;
      dependencies?: Record<string, string>;
    };
    const packed = execFileSync(
      'npm',
      ['pack', '--ignore-scripts', '--silent', '--pack-destination', join(dir, '-'), `./${source}`],
      { encoding: 'utf8', env: npmEnv },
    );
    const file = packed.trim().split('\n').at(-1)!;
    const bytes = readFileSync(join(dir, '-', file));
    const dependencies = manifest.dependencies ?? {};
    pending.push(...Object.keys(dependencies));
    const packument = {
      name,
      'dist-tags': { latest: manifest.version },
      versions: {
        [manifest.version]: {
          name,
          version: manifest.version,
          dependencies,
          dist: {
            tarball: `@BASE@/-/${file}`,
            shasum: createHash('sha1').update(bytes).digest('hex'),
            integrity: `sha512-${createHash('sha512').update(bytes).digest('base64')}`,
          },
        },
      },
    };
    writeFileSync(join(dir, `${name}.json`), JSON.stringify(packument));
  }
}

/** The origin (a 50 MB body), a banner server (one byte at once, like ssh) and the registry. */
const SERVERS_PROGRAM = `
const http = require('node:http'), net = require('node:net'), fs = require('node:fs'), path = require('node:path');
const [BIG, REGISTRY] = [Number(process.argv[1]), process.argv[2]];
const chunk = Buffer.alloc(65536);
const origin = http.createServer((_req, res) => {
  res.writeHead(200, { 'content-length': BIG });
  let left = BIG;
  const pump = () => {
    while (left > 0) {
      const piece = chunk.subarray(0, Math.min(left, chunk.length));
      left -= piece.length;
      if (!res.write(piece)) return void res.once('drain', pump);
    }
    res.end();
  };
  pump();
});
const registry = http.createServer((req, res) => {
  const url = decodeURIComponent((req.url || '/').split('?')[0]);
  const file = url.startsWith('/-/') ? path.join(REGISTRY, '-', path.basename(url)) : path.join(REGISTRY, path.basename(url) + '.json');
  let body;
  try { body = fs.readFileSync(file); } catch { res.writeHead(404); return void res.end('{}'); }
  if (file.endsWith('.json')) body = Buffer.from(body.toString().replaceAll('@BASE@', 'http://' + req.headers.host));
  res.writeHead(200, { 'content-length': body.length });
  res.end(body);
});
const banner = net.createServer((s) => { s.on('error', () => {}); s.end('!'); });
origin.listen(0, '127.0.0.1', () => registry.listen(0, '127.0.0.1', () => banner.listen(0, '127.0.0.1', () =>
  process.stdout.write(JSON.stringify({ origin: origin.address().port, registry: registry.address().port, banner: banner.address().port }) + '\\n'))));
`;

type Ports = { origin: number; registry: number; banner: number };

async function startServers(registryDir: string): Promise<Ports & { pid: number; close(): void }> {
  const child = spawn(process.execPath, ['-e', SERVERS_PROGRAM, String(BIG_BYTES), registryDir], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const ports = await new Promise<Ports>((resolve, reject) => {
    let text = '';
    child.stdout.on('data', (chunk: Buffer) => {
      text += chunk.toString();
      if (text.includes('\n')) resolve(JSON.parse(text) as Ports);
    });
    child.once('exit', (code) => reject(new Error(`the bench servers exited (${code})`)));
  });
  return { ...ports, pid: child.pid ?? 0, close: () => child.kill() };
}

/** Connect and read the server's first byte, CONNECTS times; prints the median in ms. */
function connectScript(host: string, port: number): string {
  return `python3 - <<'PY'
import socket, time
times = []
for _ in range(${CONNECTS}):
    t = time.perf_counter(); s = socket.create_connection(('${host}', ${port})); s.recv(1); times.append(time.perf_counter() - t); s.close()
times.sort(); print(times[len(times) // 2] * 1000)
PY`;
}

export async function benchEgressNames(): Promise<Figure[]> {
  const work = mkdtempSync(join(tmpdir(), 'paddock-bench-names-'));
  const registryDir = join(work, 'registry');
  packRegistry(registryDir);
  const ports = await startServers(registryDir);
  const dataDir = join(work, 'data');
  mkdirSync(dataDir);
  const db = openDatabase(join(dataDir, 'paddock.db'));
  const logger = silentLogger();
  const policyConfig = policySchema.parse({
    http: {
      allow: [`origin.bench:${ports.origin}`, `registry.bench:${ports.registry}`],
      hosts: { 'origin.bench': '127.0.0.1', 'registry.bench': '127.0.0.1', 'banner.bench': '127.0.0.1' },
    },
    tcp: { allow: [`banner.bench:${ports.banner}`] },
  });
  const manager = new ComputerManager({
    backend: new BwrapBackend({ logger }),
    config: computerSchema.parse({
      defaultProfile: 'net',
      profiles: [
        {
          id: 'net',
          name: 'Net',
          requires: ['python3', 'curl', 'npm'],
          network: { mode: 'proxy' },
          limits: { processes: 512, memoryMb: 2048, diskMb: 2048 },
        },
      ],
    }),
    dataDir,
    dockUrl: 'http://127.0.0.1:7331',
    logger,
    launchLinks: new SqliteLaunchLinkStore(db),
    egress: new EgressService({
      policy: createWhitelistSandbox(policyConfig),
      audit: new SqliteAuditStore(db),
      dns: { lookup: () => Promise.reject(new Error('no DNS in the bench')) },
      limits: { ...DEFAULT_EGRESS_LIMITS, connectionsPerSecond: 100_000 },
      ports: () => rulePorts(policyConfig),
    }),
  });
  const run = async (script: string): Promise<JobResult> => {
    const started = await manager.runCommand({
      script,
      waitMs: 0,
      timeoutMs: 600_000,
      channel: {
        caller: { principal: OWNER, caller: 'bench', via: 'direct', attended: true },
        parentId: 'bench',
      },
    });
    let result = manager.readJob(started.jobId, undefined, 1 << 20);
    while (!result.terminationObserved) {
      await new Promise((r) => setTimeout(r, 50));
      result = manager.readJob(started.jobId, undefined, 1 << 20);
    }
    if (result.exitCode !== 0) throw new Error(`bench job failed: ${result.stderr.slice(-2000)}`);
    return result;
  };
  try {
    manager.launch('net');
    await manager.computer!.booted;
    // the project's lockfile, made once on the host against the mirror
    const project = join(work, 'project');
    mkdirSync(project);
    const deps = Object.fromEntries(PROJECT_DEPS.map((d) => [d, '*']));
    const manifest = JSON.stringify({ name: 'bench-project', version: '1.0.0', dependencies: deps });
    writeFileSync(join(project, 'package.json'), manifest);
    const hostRegistry = `--registry=http://127.0.0.1:${ports.registry}/`;
    await run$('npm', ['install', ...NPM_FLAGS, hostRegistry, `--cache=${join(work, 'lock-cache')}`], {
      cwd: project,
      timeout: 120_000,
      env: npmEnv,
    });
    const lock = readFileSync(join(project, 'package-lock.json'), 'utf8');
    const packages = Object.keys((JSON.parse(lock) as { packages: object }).packages).length - 1;
    const download: { host: number[]; guest: number[] } = { host: [], guest: [] };
    const npm: { host: number[]; guest: number[] } = { host: [], guest: [] };
    const curl = (url: string) => `/usr/bin/time -f '%U %S' curl -s -o /dev/null -w '%{time_total}' ${url}`;
    // where the CPU goes: the guest agent is the node process below this one that is not the servers
    const agent = descendantsNamed(process.pid, 'node', [ports.pid])[0] ?? null;
    const cpu = { host: new CpuTally(), guest: new CpuTally() };
    const origin = () => cpuSeconds(ports.pid);
    for (let i = 0; i < RUNS; i++) {
      // 1. download
      const onHost = await cpu.host.measure({ origin }, () =>
        run$('bash', ['-c', curl(`http://127.0.0.1:${ports.origin}/big`)]),
      );
      download.host.push(Number(onHost.stdout));
      cpu.host.add('curl', timeOutputSeconds(onHost.stderr));
      const inside = await cpu.guest.measure(
        { origin, server: ownCpuSeconds, ...(agent ? { agent: () => cpuSeconds(agent) } : {}) },
        () => run(`${NO_PROXY}; ${curl(`http://origin.bench:${ports.origin}/big`)}`),
      );
      download.guest.push(Number(inside.stdout.trim()));
      cpu.guest.add('curl', timeOutputSeconds(inside.stderr));
      // 3. npm ci of the lockfile, an empty cache each time
      const dir = join(work, `host-${i}`);
      mkdirSync(dir);
      writeFileSync(join(dir, 'package.json'), manifest);
      writeFileSync(join(dir, 'package-lock.json'), lock);
      const t0 = performance.now();
      await run$('npm', ['ci', ...NPM_FLAGS, hostRegistry, `--cache=${join(dir, '.cache')}`], {
        cwd: dir,
        timeout: 120_000,
        env: npmEnv,
      });
      npm.host.push((performance.now() - t0) / 1000);
      const r = await run(
        [
          NO_PROXY,
          `mkdir -p /workspace/p${i} && cd /workspace/p${i}`,
          `echo ${Buffer.from(manifest).toString('base64')} | base64 -d > package.json`,
          `echo ${Buffer.from(lock).toString('base64')} | base64 -d > package-lock.json`,
          's=$(date +%s%N)',
          `npm ci ${NPM_FLAGS.join(' ')} --registry=http://registry.bench:${ports.registry}/ --replace-registry-host=always --cache=/tmp/npm-cache-${i} >/dev/null`,
          'e=$(date +%s%N); echo $(( (e - s) / 1000000 ))',
          `test "$(ls node_modules | wc -l)" -ge ${PROJECT_DEPS.length}`,
        ].join('\n'),
      );
      npm.guest.push(Number(r.stdout.trim()) / 1000);
    }
    // 2. connection set-up: connect and read the server's first byte (the same program both sides)
    const guestConnect = Number(
      (await run(`${NO_PROXY}; ${connectScript('banner.bench', ports.banner)}`)).stdout.trim(),
    );
    const hostConnect = Number(
      (await run$('bash', ['-c', connectScript('127.0.0.1', ports.banner)])).stdout.trim(),
    );
    const mbps = (s: number) => BIG_BYTES / 1024 / 1024 / s;
    const mib = (RUNS * BIG_BYTES) / 1024 / 1024;
    const path = (tally: CpuTally, roles: string[]) =>
      roles.reduce((sum, r) => sum + tally.perMib(r, mib), 0);
    const diagnostic = 'diagnostic: N cores move ≤ N × 1000 ÷ (path ms/MiB) MiB/s';
    const cpuFigures: Figure[] = agent
      ? [
          {
            name: 'CPU per MiB by name: the server (egress proxy, host end of the link)',
            value: cpu.guest.perMib('server', mib),
            unit: 'ms/MiB',
            target: diagnostic,
          },
          {
            name: 'CPU per MiB by name: the guest agent (guest end of the link, relay)',
            value: cpu.guest.perMib('agent', mib),
            unit: 'ms/MiB',
            target: diagnostic,
          },
          {
            name: 'CPU per MiB by name: whole path (origin, server, agent, curl)',
            value: path(cpu.guest, ['origin', 'server', 'agent', 'curl']),
            unit: 'ms/MiB',
            target: diagnostic,
            peers: [
              { name: "the host's own download (origin, curl)", value: path(cpu.host, ['origin', 'curl']) },
            ],
          },
        ]
      : [];
    return [
      {
        name: '50 MB download by name (curl, no proxy variable)',
        value: mbps(median(download.guest)),
        unit: 'MiB/s',
        target: '≥ 0.8× the host',
        peers: [{ name: 'curl on the host, same loopback server', value: mbps(median(download.host)) }],
      },
      ...cpuFigures,
      {
        name: 'connection set-up by name (connect + first byte, median)',
        value: guestConnect,
        unit: 'ms',
        target: '≤ direct + 3 ms',
        peers: [{ name: 'the same program on the host, direct', value: hostConnect }],
      },
      {
        name: 'added set-up time of one connection',
        value: guestConnect - hostConnect,
        unit: 'ms',
        target: '≤ 3 ms',
      },
      {
        name: `npm ci of a ${packages}-package lockfile by name (empty cache)`,
        value: median(npm.guest),
        unit: 's',
        target: '≤ 1.3× the host',
        peers: [{ name: 'npm ci on the host, empty cache', value: median(npm.host) }],
      },
    ];
  } finally {
    await manager.close();
    db.close();
    ports.close();
    rmSync(work, { recursive: true, force: true });
  }
}
