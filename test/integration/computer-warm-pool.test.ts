/**
 * The warm pool with real bwrap sandboxes: a launch takes a pooled sandbox instead of booting,
 * the pool refills, a pooled sandbox holds nothing of another computer, a kept workspace boots
 * cold, a pool that cannot boot never breaks a launch, and shutdown leaves no pooled process.
 */
import assert from 'node:assert/strict';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { BwrapBackend } from '../../src/computer/backend/bwrap/backend.js';
import { isAlive } from '../../src/computer/backend/bwrap/proc.js';
import type { ComputerBackend } from '../../src/computer/backend/types.js';
import type { ComputerEvent } from '../../src/computer/events.js';
import type { Generation } from '../../src/computer/generation/generation.js';
import type { ComputerManager } from '../../src/computer/manager.js';
import { ComputerService } from '../../src/computer/service.js';
import { computerSchema } from '../../src/config/computer-schema.js';
import { PaddockError } from '../../src/shared/errors.js';
import { createLogger, type Logger } from '../../src/shared/logger.js';
import { processesWith } from '../helpers/audit-rows.js';
import { startServe, tempProject } from '../helpers/paddock-process.js';
import { pollUntil } from '../helpers/poll.js';
import { hostDescendants, launchRunning } from '../unit/computer/fixture.js';
import { startServer } from '../unit/net/helpers.js';
import { withEgressComputer } from './egress-fixture.js';

interface Pool {
  service: ComputerService;
  dataDir: string;
  /** Log lines of the service, in order. */
  lines: string[];
  events: ComputerEvent[];
}

function startService(
  root: string,
  computer: Record<string, unknown>,
  wrap?: (b: ComputerBackend) => ComputerBackend,
): Pool {
  const dataDir = join(root, 'data');
  mkdirSync(dataDir, { recursive: true });
  const lines: string[] = [];
  const logger: Logger = createLogger({ level: 'info', write: (l) => lines.push(l) });
  const bwrap = new BwrapBackend({ logger });
  const service = new ComputerService({
    backend: wrap ? wrap(bwrap) : bwrap,
    config: computerSchema.parse({ autoLaunch: false, ...computer }),
    dataDir,
    dockUrl: 'http://127.0.0.1:7331',
    logger,
  });
  const events: ComputerEvent[] = [];
  service.subscribe((e) => events.push(e));
  return { service, dataDir, lines, events };
}

async function withPool(
  computer: Record<string, unknown>,
  fn: (pool: Pool) => Promise<void>,
  wrap?: (b: ComputerBackend) => ComputerBackend,
): Promise<void> {
  const root = mkdtempSync(join(tmpdir(), 'paddock-warm-'));
  const pool = startService(root, computer, wrap);
  try {
    await fn(pool);
  } catch (e) {
    console.error(pool.lines.join('\n'));
    console.error(JSON.stringify(pool.service.list(), null, 2));
    throw e;
  } finally {
    await pool.service.close();
    rmSync(root, { recursive: true, force: true });
  }
}

/** Launches `profileId` on computer `key` and waits until it runs. */
async function running(m: ComputerManager, profileId = 'shell'): Promise<Generation> {
  m.launch(profileId);
  const c = m.computer!;
  await c.booted;
  if (c.lifecycle !== 'running') throw new Error(`boot failed: ${c.bootError}`);
  return c;
}

async function sh(m: ComputerManager, script: string): Promise<string> {
  const r = await m.runCommand({ script, waitMs: 20_000, timeoutMs: 30_000 });
  assert.equal(r.terminationObserved, true, `${script} did not finish`);
  return r.stdout;
}

const readyOf = (pool: Pool, n: number, profile = 'shell') =>
  pollUntil(() => pool.service.pool.ready(profile) >= n, `${n} warm ${profile} sandbox(es)`, 30_000);

describe('warm pool (bwrap)', { concurrency: false }, () => {
  it('a launch with a warm sandbox ready runs on it without a cold boot, and the pool refills', async () => {
    await withPool({ warm: { shell: 1 } }, async (pool) => {
      await readyOf(pool, 1);
      const [pooledPid] = pool.service.pool.hostPids();
      const m = pool.service.byKey('private:mcp:a');
      const c = await running(m);
      assert.equal(c.bootSource, 'warm');
      assert.equal(c.instance!.hostPid, pooledPid);
      const runningEvent = pool.events.find(
        (e) => e.type === 'lifecycle' && e.generation === c.generation && e.lifecycle === 'running',
      );
      assert.deepEqual(runningEvent && 'bootSource' in runningEvent ? runningEvent.bootSource : null, 'warm');
      assert.equal(await sh(m, 'echo $((6*7)) && id -un'), '42\nagent\n');
      // the pool boots a new sandbox in the background; the computer keeps its own
      await readyOf(pool, 1);
      const [refilled] = pool.service.pool.hostPids();
      assert.notEqual(refilled, c.instance!.hostPid);
      // a second computer takes the refilled one
      const other = await running(pool.service.byKey('private:mcp:b'));
      assert.equal(other.bootSource, 'warm');
      assert.equal(other.instance!.hostPid, refilled);
    });
  });

  it('a pooled sandbox handed to computer B holds no file, process or environment of computer A, whose sandbox never returns to the pool', async () => {
    await withPool({ warm: { shell: 1 } }, async (pool) => {
      await readyOf(pool, 1);
      const a = pool.service.byKey('private:mcp:a');
      const ca = await running(a);
      assert.equal(ca.bootSource, 'warm');
      const aPid = ca.instance!.hostPid;
      const aTree = [aPid, ...hostDescendants(aPid)];
      await sh(
        a,
        [
          'echo a > /workspace/a-was-here',
          'echo a > /tmp/a-was-here',
          'echo "export A_SECRET=a-secret-4711" >> /workspace/.bashrc',
          'A_SECRET=a-secret-4711 setsid sleep 4711 > /dev/null 2>&1 < /dev/null &',
          'true',
        ].join('\n'),
      );
      await pollUntil(() => processesWith('sleep 4711').length > 0, "A's background process", 10_000);
      // the probes B runs below see A's traces inside A (so they can fail)
      const probes = {
        files: "find /workspace /tmp -mindepth 1 -not -path '/tmp/.paddock-channel*' | wc -l",
        secret: 'grep -rl a-secret /workspace /tmp 2>/dev/null | wc -l',
        process: 'cat /proc/[0-9]*/cmdline 2>/dev/null | tr "\\0" " " | grep -c "sleep [4]711"; true',
        environ: 'cat /proc/[0-9]*/environ 2>/dev/null | tr "\\0" "\\n" | grep -c "a-[s]ecret"; true',
      };
      // a job reads the environment of its own processes only (computer-job-isolation.test.ts), so
      // in A the environment probe is shown to work on a child of its own that holds the secret
      // (once the child has exec'd sleep: until then /proc shows the environment it was forked with)
      const environInA = `A_SECRET=a-secret-4711 sleep 30 & until [ "$(tr '\\0' ' ' < /proc/$!/cmdline 2>/dev/null)" = "sleep 30 " ]; do :; done; ${probes.environ}; kill $!`;
      assert.equal(await sh(a, probes.files), '3\n');
      assert.equal(await sh(a, probes.secret), '1\n');
      assert.equal(await sh(a, probes.process), '1\n');
      assert.equal(await sh(a, environInA), '1\n');
      // A stops: its sandbox is destroyed, never pooled
      await pool.service.byKey('private:mcp:a').stop(new PaddockError('NOT_RUNNING', 'test stop'));
      await readyOf(pool, 1);
      assert.ok(!pool.service.pool.hostPids().includes(aPid), "A's sandbox is back in the pool");
      await pollUntil(() => aTree.every((p) => !isAlive(p)), "A's sandbox processes to end", 10_000);
      assert.deepEqual(processesWith('sleep 4711'), []);

      const b = pool.service.byKey('private:mcp:b');
      const cb = await running(b);
      assert.equal(cb.bootSource, 'warm');
      assert.notEqual(cb.instance!.hostPid, aPid);
      // the guest agent's own tool-channel root in /tmp is all a fresh sandbox holds
      assert.equal(await sh(b, probes.files), '0\n');
      assert.equal(await sh(b, probes.secret), '0\n');
      assert.equal(await sh(b, probes.process), '0\n');
      assert.equal(await sh(b, probes.environ), '0\n');
      assert.equal(await sh(b, 'env | grep -c A_SECRET; true'), '0\n');
      // the generation is bound at take time: B's ids are its own, A's answer stale or not found
      assert.ok(cb.generation > ca.generation);
      assert.equal(pool.service.byKey('private:mcp:a').computer?.lifecycle, 'stopped');
    });
  });

  it('a relaunch takes a warm sandbox and starts with a fresh workspace', async () => {
    await withPool({ warm: { shell: 1 } }, async (pool) => {
      const m = pool.service.byKey('private:mcp:a');
      await readyOf(pool, 1);
      const first = await running(m);
      await sh(m, 'echo one > /workspace/old');
      await readyOf(pool, 1);
      const second = await running(m);
      assert.equal(second.bootSource, 'warm');
      assert.equal(first.lifecycle, 'stopped');
      assert.equal(await sh(m, 'ls -A /workspace; echo end'), 'end\n');
    });
  });

  it('a warm relaunch of a profile with a read-write mount runs only after every process of the previous generation is gone', async () => {
    const shared = mkdtempSync(join(tmpdir(), 'paddock-warm-shared-'));
    chmodSync(shared, 0o777);
    try {
      const profile = {
        id: 'rw',
        name: 'RW',
        requires: ['bash'],
        warm: 1,
        mounts: [{ source: shared, target: '/shared', readOnly: false }],
      };
      await withPool({ profiles: [profile] }, async (pool) => {
        const m = pool.service.byKey('private:mcp:a');
        await readyOf(pool, 1, 'rw');
        const first = await running(m, 'rw');
        let firstExited = false;
        void first.instance!.exited.then(() => {
          firstExited = true;
        });
        await sh(m, 'echo from-first > /shared/mark');
        await readyOf(pool, 1, 'rw');
        const second = await running(m, 'rw');
        assert.equal(second.bootSource, 'warm');
        assert.equal(firstExited, true, 'the previous sandbox was still alive when the new one ran');
        assert.equal(await sh(m, 'cat /shared/mark'), 'from-first\n');
      });
    } finally {
      rmSync(shared, { recursive: true, force: true });
    }
  });

  it('a computer with a kept workspace boots cold and leaves the warm sandbox in the pool', async () => {
    await withPool({ warm: { shell: 1 }, named: { keeper: { workspace: 'keep' } } }, async (pool) => {
      await readyOf(pool, 1);
      const pooled = pool.service.pool.hostPids();
      const m = pool.service.byKey('named:keeper');
      const c = await running(m);
      assert.equal(c.bootSource, 'cold');
      assert.deepEqual(pool.service.pool.hostPids(), pooled);
      await sh(m, 'echo kept > /workspace/k');
      const again = await running(m);
      assert.equal(again.bootSource, 'cold');
      assert.equal(await sh(m, 'cat /workspace/k'), 'kept\n');
    });
  });

  it('a pool whose boots fail logs and retries with backoff while launches boot cold', async () => {
    let failures = 2;
    const flaky = (backend: ComputerBackend): ComputerBackend => ({
      name: backend.name,
      hasProgram: (n) => backend.hasProgram(n),
      dispose: () => backend.dispose(),
      launch: (spec) => {
        if (spec.name?.startsWith('warm-') && failures > 0) {
          failures--;
          return Promise.reject(new PaddockError('INTERNAL', 'injected warm boot failure'));
        }
        return backend.launch(spec);
      },
    });
    await withPool(
      { warm: { shell: 1 } },
      async (pool) => {
        await pollUntil(
          () => pool.lines.some((l) => l.includes('computer.warm_failed')),
          'a logged warm failure',
          10_000,
        );
        const m = pool.service.byKey('private:mcp:a');
        const c = await running(m);
        assert.equal(c.bootSource, 'cold');
        assert.equal(await sh(m, 'echo ok'), 'ok\n');
        await readyOf(pool, 1);
        const retries = pool.lines.filter((l) => l.includes('computer.warm_failed'));
        assert.equal(retries.length, 2);
        assert.match(retries[0]!, /retryMs=1000/);
        assert.match(retries[1]!, /retryMs=2000/);
      },
      flaky,
    );
  });

  it('the pool never boots past computer.maxComputers, and a cold launch at the cap takes a pooled sandbox\u2019s room', async () => {
    await withPool({ maxComputers: 2, warm: { shell: 1, python: 2 } }, async (pool) => {
      const sizes: number[] = [];
      const sample = setInterval(() => sizes.push(pool.service.pool.size), 5);
      try {
        await pollUntil(() => pool.service.pool.ready() === 2, 'a full pool', 30_000);
        assert.equal(pool.service.pool.ready('shell'), 1);
        const a = await running(pool.service.byKey('private:mcp:a'), 'shell');
        assert.equal(a.bootSource, 'warm');
        // node keeps no warm sandbox: its cold boot needs the room of the pooled python one
        const b = await running(pool.service.byKey('private:mcp:b'), 'node');
        assert.equal(b.bootSource, 'cold');
        assert.equal(pool.service.pool.size, 0);
        assert.ok(
          pool.lines.some((l) => l.includes('computer.warm_evict')),
          'a pooled sandbox was evicted',
        );
        const dirs = readdirSync(join(pool.dataDir, 'computers')).filter((n) => n.startsWith('warm-'));
        assert.equal(dirs.length, 1, `only the warm-started computer's directory, got ${dirs.join(', ')}`);
        // a stopped computer frees room: the pool boots again, never past the cap
        await b.destroy(new PaddockError('NOT_RUNNING', 'test stop'));
        await pollUntil(() => pool.service.pool.ready() === 1, 'the pool to refill into the room', 30_000);
      } finally {
        clearInterval(sample);
      }
      assert.ok(Math.max(...sizes) <= 2, `the pool held ${Math.max(...sizes)} sandboxes under a cap of 2`);
    });
  });

  it('shutdown destroys every pooled sandbox, those still booting included, and removes their directories', async () => {
    const root = mkdtempSync(join(tmpdir(), 'paddock-warm-'));
    try {
      const pool = startService(root, { warm: { shell: 2 } });
      await readyOf(pool, 2);
      const pids = pool.service.pool.hostPids().flatMap((p) => [p, ...hostDescendants(p)]);
      assert.ok(pids.length >= 2);
      await pool.service.close();
      assert.deepEqual(
        pids.filter((p) => isAlive(p)),
        [],
      );
      assert.deepEqual(
        readdirSync(join(pool.dataDir, 'computers')).filter((n) => n.startsWith('warm-')),
        [],
      );

      // closing while the pool boots
      const again = startService(root, { warm: { shell: 2 } });
      await pollUntil(() => again.service.pool.size > 0, 'a pooled boot under way', 10_000);
      await again.service.close();
      assert.equal(again.service.pool.size, 0);
      assert.deepEqual(
        readdirSync(join(again.dataDir, 'computers')).filter((n) => n.startsWith('warm-')),
        [],
      );
      assert.ok(existsSync(again.dataDir));
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});

/** Live host pids whose cgroup path has a group named `name` (the bwrap backend's group of a sandbox). */
function pidsInGroup(name: string): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (isAlive(Number(entry)) && readFileSync(`/proc/${entry}/cgroup`, 'utf8').includes(`/${name}`))
        pids.push(Number(entry));
    } catch {
      // gone meanwhile
    }
  }
  return pids;
}

describe('warm pool with egress (bwrap)', () => {
  it('a warm sandbox of a proxy profile reaches an allowed host, with the egress relay and credentials bound at take time', async () => {
    const stub = await startServer((req, res) => res.end(`stub says hi to ${req.url}`));
    try {
      const policy = { http: { allow: [`stub.test:${stub.port}`], hosts: { 'stub.test': '127.0.0.1' } } };
      await withEgressComputer({ policy, profile: { warm: 1 } }, async ({ manager, run, rows }) => {
        await pollUntil(() => manager.pool.ready('net') >= 1, 'a warm net sandbox', 30_000);
        const c = await launchRunning(manager, 'net');
        assert.equal(c.bootSource, 'warm');
        const r = await run(`curl -sS --max-time 20 http://stub.test:${stub.port}/warm`);
        assert.equal(r.exitCode, 0, r.stderr);
        assert.match(r.stdout, /stub says hi to \/warm/);
        const mine = rows().filter((row) => row.jobId === r.jobId);
        assert.equal(mine.length, 1);
        assert.equal(mine[0]!.success, true);
        assert.equal(mine[0]!.generation, c.generation);
      });
    } finally {
      await stub.close();
    }
  });
});

describe('warm pool across a crash of the server', () => {
  it('kill -9 of a server with pooled sandboxes leaves none of their processes or directories after the next start', async () => {
    const project = tempProject('computer:\n  warm: { shell: 2 }\n');
    let serve = await startServe(project);
    try {
      const names = await pollUntil(
        () => {
          const found = [...serve.stderr().matchAll(/computer\.warm_ready.*?(warm-[A-Za-z0-9]{6})/g)];
          return found.length >= 2 ? found.map((m) => m[1]!) : null;
        },
        'two pooled sandboxes',
        60_000,
      );
      const pids = names.flatMap((n) => pidsInGroup(n));
      if (pids.length === 0) {
        // without cgroups the sandboxes are tracked by pid file; their directories still name them
        assert.ok(existsSync(join(project.dataDir, 'computers', names[0]!)));
      }
      serve.child.kill('SIGKILL');
      await serve.stop();
      serve = await startServe(project);
      await pollUntil(() => pids.every((p) => !isAlive(p)), 'the pooled sandboxes to be gone', 20_000);
      for (const n of names) {
        assert.equal(existsSync(join(project.dataDir, 'computers', n)), false, `${n} is left`);
        assert.deepEqual(pidsInGroup(n), []);
      }
    } finally {
      await serve.stop('SIGKILL');
      project.cleanup();
    }
  });
});
