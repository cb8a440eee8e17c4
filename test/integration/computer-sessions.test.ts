/**
 * Computers by session or name, with real bwrap sandboxes: each session's private computer,
 * named computers shared by the sessions naming them, the server's cap, idle stops, and
 * workspaces that are kept only when asked.
 */
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { describe, it } from 'node:test';
import { isPaddockError } from '../../src/shared/errors.js';
import { type Session, startServer, withServer } from '../helpers/computer-server.js';
import { pollUntil } from '../helpers/poll.js';

/** Launches and waits until the computer runs; returns its generation. */
async function launched(call: Session, profileId = 'shell'): Promise<number> {
  const launch = await call('launch_computer', { profileId });
  await pollUntil(
    async () => (await call('get_computer_status')).lifecycle === 'running',
    `generation ${launch.generation} to run`,
    20_000,
  );
  return launch.generation as number;
}

/** The error code a call fails with, and its message. */
async function failure(p: Promise<unknown>): Promise<{ code: string; message: string }> {
  try {
    await p;
  } catch (e) {
    if (isPaddockError(e)) return { code: e.code, message: e.message };
    throw e;
  }
  throw new Error('the call succeeded');
}

async function output(call: Session, script: string): Promise<string> {
  const r = await call('run_command', { script, waitMs: 20_000 });
  assert.equal(r.terminationObserved, true, `${script} did not finish`);
  return String(r.stdout);
}

describe('computers by session and by name (bwrap)', { concurrency: false }, () => {
  it('gives two sessions two computers; an id of the other session\u2019s private computer is NOT_FOUND', async () => {
    await withServer({}, async ({ session }) => {
      const a = session('a');
      const b = session('b');
      const genA = await launched(a);
      assert.equal((await b('get_computer_status')).lifecycle, 'none');
      const genB = await launched(b);
      assert.notEqual(genA, genB);
      await output(a, 'echo from-a > /workspace/who');
      assert.equal(await output(b, 'cat /workspace/who 2>/dev/null || echo nothing'), 'nothing\n');
      const jobA = (await a('run_command', { script: 'echo a', waitMs: 10_000 })).jobId as string;
      // genA < genB: the id is older than b's computer, yet it was never b's — NOT_FOUND, not stale
      assert.equal((await failure(b('read_job', { jobId: jobA }))).code, 'NOT_FOUND');
      assert.equal((await failure(b('cancel_job', { jobId: jobA }))).code, 'NOT_FOUND');
      assert.equal((await a('read_job', { jobId: jobA })).stdout, 'a\n');
      // relaunching b leaves a's computer alone
      await launched(b);
      assert.equal((await a('get_computer_status')).generation, genA);
      assert.equal(await output(a, 'cat /workspace/who'), 'from-a\n');
    });
  });

  it('shares a named computer between the sessions naming it; a relaunch by one makes the other\u2019s old ids STALE_GENERATION', async () => {
    await withServer({}, async ({ session }) => {
      const c = session('c', 'review');
      const d = session('d', 'review');
      const first = await launched(c);
      assert.equal((await d('get_computer_status')).generation, first);
      await output(c, 'echo shared > /workspace/note');
      assert.equal(await output(d, 'cat /workspace/note'), 'shared\n');
      const old = (await d('run_command', { script: 'sleep 1000', waitMs: 0 })).jobId as string;
      const second = await launched(c);
      assert.ok(second > first);
      assert.equal((await d('get_computer_status')).generation, second);
      assert.equal((await failure(d('read_job', { jobId: old }))).code, 'STALE_GENERATION');
      // a private session never sees the named computer
      assert.equal((await session('e')('get_computer_status')).lifecycle, 'none');
    });
  });

  it('refuses a launch beyond computer.maxComputers with LIMIT_EXCEEDED naming the limit; a relaunch of a running one is allowed', async () => {
    await withServer({ maxComputers: 2 }, async ({ session }) => {
      await launched(session('one'));
      await launched(session('two'));
      const refused = await failure(session('three')('launch_computer', { profileId: 'shell' }));
      assert.equal(refused.code, 'LIMIT_EXCEEDED');
      assert.match(refused.message, /computer\.maxComputers/);
      assert.match(refused.message, /private:mcp:one/);
      await launched(session('two'));
    });
  });

  it('stops a computer that saw no tool call for computer.idleTimeoutMs', async () => {
    await withServer({ idleTimeoutMs: 1500 }, async ({ session, service }) => {
      const idle = session('idle');
      await launched(idle);
      // watched through the listing, which is not activity (a tool call would be)
      const state = () => service.list().find((c) => c.name === 'private:mcp:idle')?.lifecycle;
      await pollUntil(() => state() === 'stopped', 'the idle computer to stop', 30_000);
      const logged = service.byKey('private:mcp:idle').log.read({ limit: 100 }).entries;
      assert.ok(logged.some((e) => e.event === 'computer.idle_stop'));
    });
  });

  it('releases a session\u2019s private computer computer.sessionGraceMs after the session ends, and leaves a named one', async () => {
    await withServer({ sessionGraceMs: 500 }, async ({ session, service }) => {
      const gone = session('gone');
      await launched(gone);
      const c = service.byKey('private:mcp:gone').computer!;
      await launched(session('named-user', 'stays'));
      service.releaseOwner('mcp:gone');
      service.releaseOwner('mcp:named-user');
      const names = () => service.list().map((m) => m.name);
      await pollUntil(
        () => !names().includes('private:mcp:gone'),
        'the private computer to be released',
        20_000,
      );
      await pollUntil(() => c.lifecycle === 'stopped', 'its sandbox to stop', 20_000);
      assert.ok(names().includes('named:stays'));
      assert.equal(service.list().find((m) => m.name === 'named:stays')?.lifecycle, 'running');
    });
  });

  it('keeps a `workspace: keep` computer\u2019s /workspace across a relaunch and a restart, and never removes what lies next to it; a fresh one starts empty', async () => {
    const root = mkdtempSync(join(tmpdir(), 'paddock-sessions-keep-'));
    const config = { named: { keeper: { workspace: 'keep' } } };
    try {
      let server = startServer(root, config);
      const markers: string[] = [join(root, 'marker-beside-data')];
      try {
        const keeper = server.session('k', 'keeper');
        await launched(keeper);
        await output(keeper, 'echo kept > /workspace/kept.txt');
        const kept = server.service.byKey('named:keeper').computer!.hostWorkspace;
        assert.equal(readFileSync(join(kept, 'kept.txt'), 'utf8'), 'kept\n');
        // the kept files live under the data directory: in the computer's disk image where the
        // server can mount one, else in a plain directory
        const keptDir = join(server.dataDir, 'workspaces', 'named-keeper');
        assert.ok(
          existsSync(join(keptDir, 'disk.img')) || kept === join(keptDir, 'workspace'),
          `the kept workspace ${kept} is not under ${keptDir}`,
        );
        markers.push(join(keptDir, 'marker-beside-workspace'));
        markers.push(join(dirname(keptDir), 'marker-beside-computer'));
        for (const m of markers) writeFileSync(m, 'marker');
        await launched(keeper);
        assert.equal(await output(keeper, 'cat /workspace/kept.txt'), 'kept\n');
        for (const m of markers) assert.ok(existsSync(m), `${m} was removed by a relaunch`);

        const fresh = server.session('f');
        await launched(fresh);
        await output(fresh, 'echo gone > /workspace/fresh.txt');
        await launched(fresh);
        assert.equal(await output(fresh, 'cat /workspace/fresh.txt 2>/dev/null || echo empty'), 'empty\n');
      } finally {
        await server.service.close();
      }
      for (const m of markers) assert.ok(existsSync(m), `${m} was removed by the shutdown`);
      server = startServer(root, config);
      try {
        const again = server.session('k2', 'keeper');
        await launched(again);
        assert.equal(await output(again, 'cat /workspace/kept.txt'), 'kept\n');
      } finally {
        await server.service.close();
      }
      for (const m of markers) assert.ok(existsSync(m), `${m} was removed after the restart`);
      assert.ok(existsSync(tmpdir()));
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});
