import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { pollUntil } from '../helpers/poll.js';
import { codeOf, launchRunning, toolCaller, withComputer } from '../unit/computer/fixture.js';

/** Every path under /workspace with type, mode, owner, link text and content digest, as the computer sees it. */
const LISTING =
  "cd /workspace && find . -printf '%p %y %m %U %G %n %l\\n' | sort && find . -type f -exec md5sum {} + | sort";

describe('checkpoints of a computer (bwrap)', { concurrency: false }, () => {
  it("a job's files, modes, links and empty dirs survive checkpoint → change → restore, and the restore is itself undoable", async () => {
    await withComputer({}, async ({ manager, ctx }) => {
      await launchRunning(manager);
      const call = toolCaller(manager, ctx);
      const run = async (script: string) => {
        const r = await call('run_command', { script, waitMs: 10_000 });
        assert.equal(r.exitCode, 0, `${script}: ${String(r.stderr)}`);
        return String(r.stdout);
      };
      await run(
        'cd /workspace && mkdir -p src/empty bin && echo one > src/a.txt && chmod 640 src/a.txt && ' +
          'printf "#!/bin/sh\\necho hi\\n" > bin/tool && chmod 755 bin/tool && ln src/a.txt src/a-hard && ' +
          'ln -s /etc/hostname host-link && ln -s missing dangling && head -c 3000000 /dev/urandom > blob.bin',
      );
      const original = await run(LISTING);
      const first = await call('checkpoint_computer', { label: 'before the change' });
      assert.match(String(first.checkpointId), /^ck_/);
      assert.equal(first.label, 'before the change');

      await run('cd /workspace && rm -rf src bin && echo two > new.txt && head -c 1000 /dev/zero > blob.bin');
      const changed = await run(LISTING);
      assert.notEqual(changed, original);

      const restored = await call('restore_checkpoint', { checkpointId: first.checkpointId });
      assert.equal(restored.checkpointId, first.checkpointId);
      assert.match(String(restored.savedAs), /^ck_/);
      await pollUntil(
        async () => (await call('get_computer_status')).lifecycle === 'running',
        'the restored computer to run',
        30_000,
      );
      let seen = '';
      const restoredFiles = async () => {
        seen = await run(LISTING);
        return seen === original;
      };
      await pollUntil(restoredFiles, "the checkpoint's files in /workspace", 30_000).catch((e: Error) =>
        assert.equal(seen, original, e.message),
      );

      const listed = await call('list_checkpoints');
      const ids = (listed.checkpoints as { id: string; label: string | null }[]).map((c) => c.id);
      assert.deepEqual(ids, [restored.savedAs, first.checkpointId]);

      // undo the restore: the state it left comes back
      await call('restore_checkpoint', { checkpointId: restored.savedAs });
      await pollUntil(
        async () => (await call('get_computer_status')).lifecycle === 'running',
        'the computer to run again',
        30_000,
      );
      await pollUntil(
        async () => (await run(LISTING)) === changed,
        'the changed files back in /workspace',
        30_000,
      );

      assert.equal(
        await codeOf(call('restore_checkpoint', { checkpointId: 'ck_000000000AAAAAAAAAAA' })),
        'NOT_FOUND',
      );
      assert.equal(await codeOf(call('restore_checkpoint', { checkpointId: '../../etc' })), 'NOT_FOUND');
    });
  });
});
