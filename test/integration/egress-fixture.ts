/**
 * A real ComputerManager whose computers reach the network only through the egress proxy: a
 * real bwrap sandbox, the real WhitelistSandbox, a real SQLite audit store. Targets are stub
 * servers on 127.0.0.1 mapped to names with policy.http.hosts.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { StoredInvocation } from '../../src/audit/types.js';
import { BwrapBackend } from '../../src/computer/backend/bwrap/backend.js';
import { EgressService } from '../../src/computer/generation/egress.js';
import { ImageStore, imageIdsOf } from '../../src/computer/images/index.js';
import { ProfileImages } from '../../src/computer/images/profile-image.js';
import type { JobResult } from '../../src/computer/jobs/job.js';
import { ComputerManager } from '../../src/computer/manager.js';
import { computerSchema } from '../../src/config/computer-schema.js';
import { policySchema } from '../../src/config/schema.js';
import { compileInjectRules } from '../../src/net/egress/inject.js';
import { loadTerminatingCa } from '../../src/net/egress/tls-ca.js';
import { DEFAULT_EGRESS_LIMITS, type EgressLimits } from '../../src/net/egress/types.js';
import { createWhitelistSandbox, rulePorts } from '../../src/policy/index.js';
import type { Sandbox } from '../../src/policy/types.js';
import { silentLogger } from '../../src/shared/logger.js';
import { OWNER } from '../../src/shared/principal.js';
import { SqliteAuditStore } from '../../src/store/sqlite/audit-store.js';
import { openDatabase } from '../../src/store/sqlite/database.js';
import { SqliteLaunchLinkStore } from '../../src/store/sqlite/launch-link-store.js';
import type { CallerContext } from '../../src/tools/tool.js';
import { auditRowsOf } from '../helpers/audit-rows.js';
import { pollUntil } from '../helpers/poll.js';
import { launchRunning } from '../unit/computer/fixture.js';

export interface EgressFixture {
  manager: ComputerManager;
  /** The server's policy (what an agent's policy narrows). */
  policy: Sandbox;
  dataDir: string;
  rows(): StoredInvocation[];
  /** Runs a script as a job started by `mcp:egress-test` (parent `inv_run_<n>`) and waits for its end. */
  run(script: string, timeoutMs?: number, caller?: CallerContext): Promise<JobResult & { parentId: string }>;
}

export interface EgressFixtureOptions {
  policy: Record<string, unknown>;
  network?: { allow?: string[] };
  limits?: Partial<EgressLimits>;
  /** Environment of the server (inject values). */
  env?: NodeJS.ProcessEnv;
  /** Roots the proxy trusts upstream (a test's own CA). */
  upstreamCa?: string[];
  profile?: Record<string, unknown>;
  /** An image store that the profile's `image` comes from. */
  imagesDir?: string;
}

export async function withEgressComputer(
  options: EgressFixtureOptions,
  fn: (f: EgressFixture) => Promise<void>,
): Promise<void> {
  const dataDir = mkdtempSync(join(tmpdir(), 'paddock-egress-'));
  const db = openDatabase(join(dataDir, 'paddock.db'));
  const audit = new SqliteAuditStore(db);
  const logger = silentLogger();
  const policyConfig = policySchema.parse(options.policy);
  const policy = createWhitelistSandbox(policyConfig);
  const inject = compileInjectRules(policyConfig.http.inject);
  const egress = new EgressService({
    policy,
    audit,
    dns: {
      lookup: async (host) =>
        Promise.reject(Object.assign(new Error(`ENOTFOUND ${host}`), { code: 'ENOTFOUND' })),
    },
    limits: { ...DEFAULT_EGRESS_LIMITS, ...options.limits },
    env: options.env ?? {},
    ports: () => rulePorts(policyConfig, options.network?.allow ? [options.network.allow] : []),
    ...(inject.size > 0 ? { inject, ca: loadTerminatingCa(join(dataDir, 'egress-ca')) } : {}),
    ...(options.upstreamCa ? { upstreamCa: options.upstreamCa } : {}),
  });
  const backend = new BwrapBackend({ logger });
  const manager = new ComputerManager({
    backend,
    ...(options.imagesDir
      ? {
          images: new ProfileImages(
            new ImageStore(options.imagesDir, imageIdsOf(computerSchema.parse({}))).open(),
            dataDir,
            () => backend.imageSupport(),
          ),
        }
      : {}),
    config: computerSchema.parse({
      defaultProfile: 'net',
      profiles: [
        {
          id: 'net',
          name: 'Net',
          requires: ['bash'],
          network: { mode: 'proxy', ...(options.network ?? {}) },
          limits: { processes: 256, memoryMb: 2048, diskMb: 1024 },
          ...options.profile,
        },
      ],
    }),
    dataDir,
    dockUrl: 'http://127.0.0.1:7331',
    logger,
    launchLinks: new SqliteLaunchLinkStore(db),
    egress,
  });
  let runs = 0;
  const run = async (
    script: string,
    timeoutMs = 60_000,
    caller: CallerContext = { principal: OWNER, caller: 'mcp:egress-test', via: 'direct', attended: true },
  ) => {
    runs += 1;
    const parentId = `inv_run_${runs}`;
    const started = await manager.runCommand({
      script,
      waitMs: 0,
      timeoutMs,
      channel: { caller, parentId },
    });
    const done = await pollUntil(
      () => {
        const now = manager.readJob(started.jobId, undefined, 1 << 20);
        return now.terminationObserved ? now : null;
      },
      `job ${started.jobId}`,
      timeoutMs + 5000,
    );
    return { ...done, parentId };
  };
  try {
    await launchRunning(manager, 'net');
    await fn({
      manager,
      policy,
      dataDir,
      rows: () => auditRowsOf(db, 'egress'),
      run,
    });
  } catch (e) {
    const logs = manager.log
      .read({ limit: 100 })
      .entries.map((l) => `${l.level} ${l.event} ${l.message}`)
      .join('\n');
    process.stderr.write(`egress fixture failed; computer log:\n${logs}\n`);
    throw e;
  } finally {
    await manager.close();
    db.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
}
