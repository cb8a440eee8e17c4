import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { policySchema } from '../src/config/schema.js';
import { createWhitelistSandbox } from '../src/policy/index.js';
import { silentLogger } from '../src/shared/logger.js';
import { OWNER } from '../src/shared/principal.js';
import { SqliteAuditStore } from '../src/store/sqlite/audit-store.js';
import { openDatabase } from '../src/store/sqlite/database.js';
import { OtlpTracer } from '../src/telemetry/otlp-tracer.js';
import { Gateway } from '../src/tools/gateway.js';
import { PermissionPolicy } from '../src/tools/permissions.js';
import { ToolRegistry } from '../src/tools/registry.js';
import { InputValidator } from '../src/tools/validation.js';
import { connectStdio } from '../test/helpers/clients.js';
import { tempProject } from '../test/helpers/paddock-process.js';
import type { Figure } from './run.js';
import { median, timeAlternately, timeCalls } from './stats.js';

/** Gateway pipeline in-process, and the MCP round trip over stdio (HTTP load: http-load.ts). */
export async function benchGateway(): Promise<Figure[]> {
  const figures: Figure[] = [];
  const dir = mkdtempSync(join(tmpdir(), 'paddock-bench-'));
  try {
    const db = openDatabase(join(dir, 'bench.db'));
    const plainDb = openDatabase(join(dir, 'bench-unchained.db'));
    const registry = new ToolRegistry();
    registry.register([
      {
        name: 'noop',
        description: 'no-op',
        inputSchema: { type: 'object', properties: { n: { type: 'integer' } }, additionalProperties: false },
        annotations: { readOnlyHint: true },
        source: 'builtin',
        toolsets: ['builtin'],
        execute: async () => ({ structured: { ok: true } }),
      },
    ]);
    const gatewayOver = (audit: SqliteAuditStore) =>
      new Gateway({
        registry,
        audit,
        policy: createWhitelistSandbox(policySchema.parse({})),
        permissions: new PermissionPolicy([]),
        validator: new InputValidator(),
        logger: silentLogger(),
      });
    const gateway = gatewayOver(new SqliteAuditStore(db));
    // the same pipeline whose audit rows are not hashed into the chain: what the chain costs
    const unchained = gatewayOver(new SqliteAuditStore(plainDb, { hashChain: false }));
    const caller = { principal: OWNER, caller: 'bench', via: 'direct' as const, attended: true };
    const [inproc, plain] = await timeAlternately(
      20_000,
      () => gateway.call('noop', { n: 1 }, caller),
      () => unchained.call('noop', { n: 1 }, caller),
      2000,
    );
    // the same pipeline with OTLP tracing on, exporting to a local sink that drains every batch
    const sink = createServer((req, res) => {
      req.resume();
      req.on('end', () => res.writeHead(200).end());
    });
    await new Promise<void>((resolve) => sink.listen(0, '127.0.0.1', resolve));
    const tracer = new OtlpTracer({
      endpoint: `http://127.0.0.1:${(sink.address() as AddressInfo).port}`,
      service: { name: 'bench', version: '0', instanceId: 'bench' },
      logger: silentLogger(),
    });
    const tracedDb = openDatabase(join(dir, 'bench-traced.db'));
    const traced = new Gateway({
      registry,
      audit: new SqliteAuditStore(tracedDb),
      policy: createWhitelistSandbox(policySchema.parse({})),
      permissions: new PermissionPolicy([]),
      validator: new InputValidator(),
      logger: silentLogger(),
      tracer,
    });
    const [withTrace, withoutTrace] = await timeAlternately(
      20_000,
      () => traced.call('noop', { n: 1 }, caller),
      () => gateway.call('noop', { n: 1 }, caller),
      2000,
    );
    await tracer.close();
    await new Promise<void>((resolve) => sink.close(() => resolve()));
    tracedDb.close();
    figures.push({
      name: 'gateway call with OTLP tracing on, no-op (median)',
      value: median(withTrace) * 1000,
      unit: 'µs/call',
      target: 'a span costs little beside the audit row',
      peers: [{ name: 'tracing off (the same pipeline)', value: median(withoutTrace) * 1000 }],
    });
    figures.push({
      name: 'gateway+validation+audit, no-op (median)',
      value: median(inproc) * 1000,
      unit: 'µs/call',
      target: '≤ 50 µs',
      peers: [{ name: 'audit rows not hashed into the chain', value: median(plain) * 1000 }],
    });
    db.close();
    plainDb.close();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }

  const call = { name: 'recall_memory', arguments: { query: '', limit: 1 } };
  const project = tempProject();
  try {
    const stdio = await connectStdio(project, 'bench');
    const stdioTimes = await timeCalls(2000, () => stdio.callTool(call));
    figures.push({
      name: 'MCP stdio round trip, recall_memory (median)',
      value: median(stdioTimes),
      unit: 'ms/call',
      target: '≤ 1 ms',
    });
    await stdio.close();
  } finally {
    // the bridge started a server of that data directory in the background; cleanup stops it
    project.cleanup();
  }

  return figures;
}
