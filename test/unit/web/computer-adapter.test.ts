import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { BwrapBackend } from '../../../src/computer/backend/bwrap/backend.js';
import type { ComputerEvent } from '../../../src/computer/events.js';
import type { ComputerManager } from '../../../src/computer/manager.js';
import { ComputerService } from '../../../src/computer/service.js';
import { computerSchema } from '../../../src/config/computer-schema.js';
import { silentLogger } from '../../../src/shared/logger.js';
import { dockComputerFromService } from '../../../src/web/dock/index.js';
import type { ComputerChange, DockComputer } from '../../../src/web/dock/sources.js';
import { pollUntil } from '../../helpers/poll.js';

describe('the dock view of the ComputerService', () => {
  let dir: string;
  let service: ComputerService;
  let manager: ComputerManager;
  let computer: DockComputer & { close(): void };
  const changes: ComputerChange[] = [];
  let sub: { dispose(): void };

  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'paddock-dock-adapter-'));
    const logger = silentLogger();
    service = new ComputerService({
      backend: new BwrapBackend({ logger }),
      config: computerSchema.parse({ autoLaunch: false }),
      dataDir: dir,
      dockUrl: 'http://127.0.0.1',
      logger,
    });
    manager = service.byKey('private:dock');
    computer = dockComputerFromService(service, { logger });
    sub = computer.onChange((c) => changes.push(c));
  });

  after(async () => {
    sub?.dispose();
    computer?.close();
    await service?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('reports the launch, the boot and the log entries as they happen', async () => {
    assert.equal(computer.status().lifecycle, 'none');
    assert.ok(computer.profiles().some((p) => p.id === 'shell' && p.available));
    await computer.launch('shell');
    await pollUntil(() => computer.status().lifecycle === 'running', 'running');
    await pollUntil(() => changes.some((c) => c.kind === 'status'), 'a status change');
    await pollUntil(
      () => changes.some((c) => c.kind === 'log' && c.entry.event === 'computer.boot'),
      'the boot entry',
    );
    assert.equal(computer.status().generation, 1);
    assert.ok(computer.recentLogs(10).some((e) => e.event === 'computer.launch'));
  });

  it('shows a job\u2019s output while it runs and its outcome when it ends', async () => {
    // The job holds until the test, having seen it running, creates the go file.
    const script =
      'echo first-part; while [ ! -e /workspace/go ]; do sleep 0.02; done; echo second-part >&2; exit 3';
    const started = await manager.runCommand({ script, waitMs: 0, timeoutMs: 30_000 });
    const jobId = started.jobId;
    await pollUntil(() => {
      const j = computer.job(jobId);
      return j?.state === 'running' && j.stdoutTail.includes('first-part');
    }, 'the first part while running');
    const listed = await pollUntil(
      () => computer.jobs().find((j) => j.jobId === jobId),
      'the job in the list',
    );
    assert.equal(listed.command, script);
    assert.equal(listed.state, 'running');
    writeFileSync(join(manager.computer!.hostWorkspace, 'go'), '');
    const done = await pollUntil(() => {
      const j = computer.job(jobId);
      return j && j.state !== 'running' ? j : undefined;
    }, 'the end');
    assert.equal(done.state, 'failed');
    assert.equal(done.exitCode, 3);
    assert.equal(done.stderrTail, 'second-part\n');
    await pollUntil(
      () => changes.filter((c) => c.kind === 'job' && c.jobId === jobId).length >= 2,
      'a change for the start and one for the end',
    );
  });

  it('pushes typed events to a subscriber of the service: the job start with its command, its output and its exit', async () => {
    const seen: ComputerEvent[] = [];
    const sub = service.subscribe((e) => seen.push(e));
    try {
      const r = await manager.runCommand({ script: 'echo pushed', waitMs: 10_000, timeoutMs: 30_000 });
      await pollUntil(
        () => seen.some((e) => e.type === 'job.exited' && e.jobId === r.jobId),
        'the exit event',
      );
      const mine = seen.filter((e) => 'jobId' in e && e.jobId === r.jobId);
      const start = mine.find((e) => e.type === 'job.started');
      assert.ok(start && start.type === 'job.started');
      assert.equal(start.command, 'echo pushed');
      assert.equal(start.computer, manager.name);
      assert.ok(mine.some((e) => e.type === 'job.output' && e.fd === 'stdout' && e.bytes > 0));
      const exit = mine.find((e) => e.type === 'job.exited');
      assert.ok(exit && exit.type === 'job.exited' && exit.exitCode === 0);
      assert.ok(seen.some((e) => e.type === 'log' && e.entry.event === 'job.exit'));
    } finally {
      sub.dispose();
    }
  });

  it('forgets the jobs of a replaced generation', async () => {
    assert.ok(computer.jobs().length > 0);
    await computer.launch('shell');
    await pollUntil(
      () => computer.status().generation === 2 && computer.status().lifecycle === 'running',
      'generation 2 running',
    );
    await pollUntil(() => computer.jobs().length === 0, 'the old jobs gone');
  });
});
