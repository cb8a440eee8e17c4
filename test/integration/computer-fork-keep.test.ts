/**
 * Forks and keeps, with real bwrap computers of a ComputerService: fork_computer boots a named
 * computer from a checkpoint beside its origin, a named computer's files come back after a stop
 * and a restart, and `computer.checkpoints.before: [run_command]` makes each command undoable.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { isPaddockError } from '../../src/shared/errors.js';
import { type Session, startServer, withServer } from '../helpers/computer-server.js';
import { pollUntil } from '../helpers/poll.js';

/** Launches (or relaunches) and waits until the computer runs; the launch answer. */
async function launched(call: Session, profileId = 'shell'): Promise<Record<string, unknown>> {
  const launch = await call('launch_computer', { profileId });
  await running(call, `generation ${launch.generation}`);
  return launch;
}

async function running(call: Session, what: string): Promise<void> {
  await pollUntil(
    async () => (await call('get_computer_status')).lifecycle === 'running',
    `${what} to run`,
    30_000,
  );
}

/** stdout of a script that must succeed. */
async function output(call: Session, script: string): Promise<string> {
  const r = await call('run_command', { script, waitMs: 10_000 });
  assert.equal(r.exitCode, 0, `${script}: ${String(r.stderr)}`);
  return String(r.stdout);
}

async function codeOf(p: Promise<unknown>): Promise<string> {
  try {
    await p;
    return 'ok';
  } catch (e) {
    return isPaddockError(e) ? e.code : String(e);
  }
}

const LISTING =
  "cd /workspace && find . -printf '%p %y %m %l\\n' | sort && find . -type f -exec md5sum {} + | sort";

describe('forks and named computers that keep their files (bwrap)', { concurrency: false }, () => {
  it('a fork boots a new named computer with the checkpoint’s files and diverges without touching its origin', async () => {
    await withServer({}, async ({ session, service }) => {
      const origin = session('o', 'origin');
      await launched(origin);
      await output(
        origin,
        'mkdir -p /workspace/src/empty && echo one > /workspace/src/a.txt && chmod 600 /workspace/src/a.txt && ln -s src/a.txt /workspace/link',
      );
      const before = await output(origin, LISTING);
      const originGeneration = (await origin('get_computer_status')).generation;
      const ck = await origin('checkpoint_computer', { label: 'fork point' });

      const forked = await origin('fork_computer', { checkpointId: ck.checkpointId, name: 'branch' });
      assert.equal(forked.name, 'branch');
      assert.equal(forked.checkpointId, ck.checkpointId);
      const branch = session('b', 'branch');
      await running(branch, 'the fork');
      await pollUntil(
        async () => (await output(branch, LISTING)) === before,
        'the checkpoint’s files in the fork',
        30_000,
      );

      // the two diverge: what the fork does is not seen by the origin, and the reverse
      await output(branch, 'rm -rf /workspace/src && echo fork-only > /workspace/fork.txt');
      await output(origin, 'echo origin-only > /workspace/origin.txt');
      assert.equal(
        await output(origin, 'cat /workspace/src/a.txt; ls /workspace'),
        'one\nlink\norigin.txt\nsrc\n',
      );
      assert.equal(await output(branch, 'ls /workspace'), 'fork.txt\nlink\n');
      assert.equal(
        (await origin('get_computer_status')).generation,
        originGeneration,
        'the origin was not relaunched',
      );
      assert.equal(
        ((await branch('list_checkpoints')).checkpoints as unknown[]).length,
        0,
        'the fork starts its own history',
      );

      assert.equal(
        await codeOf(origin('fork_computer', { checkpointId: ck.checkpointId, name: 'branch' })),
        'FILE_EXISTS',
        'a running computer is never overwritten by a fork',
      );
      assert.equal(
        await codeOf(origin('fork_computer', { checkpointId: 'ck_000000000AAAAAAAAAAA', name: 'other' })),
        'NOT_FOUND',
      );
      assert.equal(
        await codeOf(origin('fork_computer', { checkpointId: ck.checkpointId, name: '../etc' })),
        'INVALID_ARGUMENT',
      );
      assert.equal(
        await codeOf(origin('fork_computer', { checkpointId: ck.checkpointId, name: 'origin' })),
        'INVALID_ARGUMENT',
        'a fork onto itself is refused (restore_checkpoint does that)',
      );
      assert.ok(service.list().some((c) => c.name === 'named:branch' && c.lifecycle === 'running'));
    });
  });

  it('a named computer’s files come back from its latest checkpoint after a stop and after a server restart', async () => {
    const root = mkdtempSync(join(tmpdir(), 'paddock-keep-'));
    try {
      let server = startServer(root);
      try {
        const keeper = server.session('k', 'keeper');
        const first = await launched(keeper);
        assert.equal(first.restoredFrom, undefined, 'a first launch has nothing to come back from');
        await output(
          keeper,
          'mkdir -p /workspace/proj && echo v1 > /workspace/proj/file && chmod 750 /workspace/proj',
        );
        assert.equal(await server.service.stopComputer('keeper'), true);
        const stopped = (await keeper('list_checkpoints')).checkpoints as { id: string; trigger: string }[];
        assert.equal(stopped[0]?.trigger, 'stop', 'the stop took a checkpoint');

        const again = await launched(keeper);
        assert.equal(again.restoredFrom, stopped[0]?.id);
        assert.match(String(again.message), /come back from checkpoint/);
        assert.doesNotMatch(String(again.message), /copied into the new computer/);
        await pollUntil(
          async () =>
            (await output(
              keeper,
              'cat /workspace/proj/file 2>/dev/null; stat -c %a /workspace/proj 2>/dev/null; true',
            )) === 'v1\n750\n',
          'the files back after a stop',
          30_000,
        );
        await output(keeper, 'echo v2 > /workspace/proj/file');
      } finally {
        await server.service.close();
      }
      // a new server over the same data directory: the shutdown checkpointed it
      server = startServer(root);
      try {
        const keeper = server.session('k2', 'keeper');
        const back = await launched(keeper);
        assert.match(String(back.restoredFrom), /^ck_/);
        await pollUntil(
          async () => (await output(keeper, 'cat /workspace/proj/file 2>/dev/null; true')) === 'v2\n',
          'the files back after a restart',
          30_000,
        );
        // a private computer keeps nothing across its owner: no checkpoint is taken when it stops
        const mine = server.session('p');
        await launched(mine);
        await output(mine, 'echo private > /workspace/p.txt');
        await launched(mine);
        assert.equal(await output(mine, 'ls /workspace'), '');
      } finally {
        await server.service.close();
      }
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });

  it('with checkpoints.before [run_command], each command is undone by the checkpoint taken just before it', async () => {
    await withServer({ checkpoints: { before: ['run_command'] } }, async ({ session }) => {
      const call = session('r', 'careful');
      await launched(call);
      await output(call, 'echo precious > /workspace/data.txt');
      await output(call, 'rm /workspace/data.txt');
      const list = (await call('list_checkpoints')).checkpoints as {
        id: string;
        trigger: string;
        before: { invocationId: string; tool: string } | null;
      }[];
      assert.equal(list.length, 2, 'one checkpoint per command');
      const [beforeRm] = list;
      assert.equal(beforeRm?.trigger, 'run_command');
      assert.equal(beforeRm?.before?.tool, 'run_command');
      assert.match(String(beforeRm?.before?.invocationId), /^inv_r_\d+$/, 'it names the call it precedes');
      assert.notEqual(
        beforeRm?.before?.invocationId,
        list[1]?.before?.invocationId,
        'each names its own call',
      );
      await call('restore_checkpoint', { checkpointId: beforeRm!.id });
      await running(call, 'the restored computer');
      await pollUntil(
        async () => {
          const r = await call('run_command', { script: 'cat /workspace/data.txt', waitMs: 10_000 });
          return r.stdout === 'precious\n';
        },
        'the removed file back',
        30_000,
      );
    });
  });
});
