/**
 * Benchmarks of egress, measured from inside a real bwrap computer with one Python script:
 * a 100 MB download through the proxy (guest relay → host proxy → a server on the host's
 * loopback) beside the same download from a server on the computer's own loopback (no proxy),
 * and the median of one small request each way. Needs root-capable bwrap like the tests.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BwrapBackend } from '../src/computer/backend/bwrap/backend.js';
import { EgressService } from '../src/computer/generation/egress.js';
import { ComputerManager } from '../src/computer/manager.js';
import { computerSchema } from '../src/config/computer-schema.js';
import { policySchema } from '../src/config/schema.js';
import { DEFAULT_EGRESS_LIMITS } from '../src/net/egress/types.js';
import { createWhitelistSandbox } from '../src/policy/index.js';
import { silentLogger } from '../src/shared/logger.js';
import { OWNER } from '../src/shared/principal.js';
import { SqliteAuditStore } from '../src/store/sqlite/audit-store.js';
import { openDatabase } from '../src/store/sqlite/database.js';
import { SqliteLaunchLinkStore } from '../src/store/sqlite/launch-link-store.js';
import type { Figure } from './run.js';

const BIG_BYTES = 100 * 1024 * 1024;
const SMALL_REQUESTS = 200;

/** The in-computer script: serves the same bytes on its own loopback and times both paths. */
function script(port: number): string {
  return `
import http.server, json, os, threading, time, urllib.request
BIG = ${BIG_BYTES}
CHUNK = b'\\0' * 65536
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = 'HTTP/1.1'
    def log_message(self, *a): pass
    def do_GET(self):
        n = BIG if self.path == '/big' else 2
        self.send_response(200); self.send_header('content-length', str(n)); self.end_headers()
        left = n
        while left > 0:
            piece = CHUNK[:min(left, len(CHUNK))]; self.wfile.write(piece); left -= len(piece)
srv = http.server.ThreadingHTTPServer(('127.0.0.1', 9099), H)
threading.Thread(target=srv.serve_forever, daemon=True).start()
direct = urllib.request.build_opener(urllib.request.ProxyHandler({}))
proxied = urllib.request.build_opener()
def fetch(opener, url):
    with opener.open(url, timeout=120) as r:
        n = 0
        while True:
            b = r.read(1 << 20)
            if not b: return n
            n += len(b)
out = {}
for name, opener, base in (('direct', direct, 'http://127.0.0.1:9099'), ('proxy', proxied, 'http://origin.bench:${port}')):
    fetch(opener, base + '/small')
    t = time.perf_counter(); n = fetch(opener, base + '/big'); out[name + '_big_s'] = time.perf_counter() - t
    assert n == BIG, n
    times = []
    for _ in range(${SMALL_REQUESTS}):
        t = time.perf_counter(); fetch(opener, base + '/small'); times.append(time.perf_counter() - t)
    times.sort(); out[name + '_small_ms'] = times[len(times) // 2] * 1000
print(json.dumps(out))
`;
}

export async function benchEgress(): Promise<Figure[]> {
  const chunk = Buffer.alloc(65_536);
  const origin = createServer((req, res) => {
    const n = req.url === '/big' ? BIG_BYTES : 2;
    res.writeHead(200, { 'content-length': n });
    let left = n;
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
  await new Promise<void>((resolve) => origin.listen(0, '127.0.0.1', resolve));
  const port = (origin.address() as AddressInfo).port;
  const dataDir = mkdtempSync(join(tmpdir(), 'paddock-bench-egress-'));
  const db = openDatabase(join(dataDir, 'paddock.db'));
  const logger = silentLogger();
  const policy = createWhitelistSandbox(
    policySchema.parse({ http: { allow: [`origin.bench:${port}`], hosts: { 'origin.bench': '127.0.0.1' } } }),
  );
  const manager = new ComputerManager({
    backend: new BwrapBackend({ logger }),
    config: computerSchema.parse({
      defaultProfile: 'net',
      profiles: [{ id: 'net', name: 'Net', requires: ['python3'], network: { mode: 'proxy' } }],
    }),
    dataDir,
    dockUrl: 'http://127.0.0.1:7331',
    logger,
    launchLinks: new SqliteLaunchLinkStore(db),
    egress: new EgressService({
      policy,
      audit: new SqliteAuditStore(db),
      dns: { lookup: () => Promise.reject(new Error('no DNS in the bench')) },
      // the small-request figure opens connections faster than the default 100 per second
      limits: { ...DEFAULT_EGRESS_LIMITS, connectionsPerSecond: 100_000 },
    }),
  });
  try {
    manager.launch('net');
    await manager.computer!.booted;
    const started = await manager.runCommand({
      script: `python3 - <<'PY'\n${script(port)}\nPY`,
      waitMs: 0,
      timeoutMs: 600_000,
      channel: {
        caller: { principal: OWNER, caller: 'bench', via: 'direct', attended: true },
        parentId: 'bench',
      },
    });
    let result = manager.readJob(started.jobId, undefined, 1 << 20);
    while (!result.terminationObserved) {
      await new Promise((r) => setTimeout(r, 200));
      result = manager.readJob(started.jobId, undefined, 1 << 20);
    }
    if (result.exitCode !== 0) {
      const log = manager
        .readLogs({ limit: 20 })
        .entries.map((e) => `${e.event}: ${e.message}`)
        .join('\n');
      throw new Error(`bench script failed: ${result.stderr.slice(-2000)}\nthe computer's log:\n${log}`);
    }
    const m = JSON.parse(result.stdout.trim().split('\n').at(-1)!) as Record<string, number>;
    const mbps = (s: number) => BIG_BYTES / 1024 / 1024 / s;
    return [
      {
        name: '100 MB download through the egress proxy',
        value: mbps(m.proxy_big_s!),
        unit: 'MiB/s',
        target: 'beside direct',
      },
      {
        name: '100 MB download, direct loopback in the computer',
        value: mbps(m.direct_big_s!),
        unit: 'MiB/s',
        target: 'peer',
      },
      {
        name: 'small request through the egress proxy (median)',
        value: m.proxy_small_ms!,
        unit: 'ms',
        target: 'beside direct',
      },
      {
        name: 'small request, direct loopback in the computer (median)',
        value: m.direct_small_ms!,
        unit: 'ms',
        target: 'peer',
      },
      {
        name: 'added latency of one small request',
        value: m.proxy_small_ms! - m.direct_small_ms!,
        unit: 'ms',
        target: '< 5 ms',
      },
    ];
  } finally {
    await manager.close();
    db.close();
    await new Promise<void>((resolve) => origin.close(() => resolve()));
    rmSync(dataDir, { recursive: true, force: true });
  }
}
