import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { pollUntil } from '../helpers/poll.js';
import { launchRunning, toolCaller, withComputer } from '../unit/computer/fixture.js';

describe('a relaunch and the /workspace it replaces (bwrap)', { concurrency: false }, () => {
  it('says the replaced /workspace was deleted, and keepWorkspace carries the files over, symbolic links unfollowed', async () => {
    await withComputer({}, async ({ manager, ctx }) => {
      await launchRunning(manager);
      const call = toolCaller(manager, ctx);
      const running = async () =>
        pollUntil(
          async () => (await call('get_computer_status')).lifecycle === 'running',
          'the computer to run',
          20_000,
        );
      await call('run_command', {
        script:
          'mkdir -p /workspace/src && echo kept > /workspace/src/a.txt && ln -s /etc/hostname /workspace/link',
        waitMs: 5000,
      });
      const carried = await call('launch_computer', { profileId: 'shell', keepWorkspace: true });
      assert.equal(carried.previousWorkspace, 'carried');
      assert.match(String(carried.message), /was replaced: .*copied/);
      await running();
      const read = await call('run_command', {
        script:
          'cat /workspace/src/a.txt; readlink /workspace/link; echo x > /workspace/src/b.txt && echo writable',
        waitMs: 5000,
      });
      assert.equal(read.stdout, 'kept\n/etc/hostname\nwritable\n', String(read.stderr));

      const dropped = await call('launch_computer', { profileId: 'shell' });
      assert.equal(dropped.previousWorkspace, 'deleted');
      assert.match(String(dropped.message), /\/workspace was deleted.*keepWorkspace/);
      await running();
      const gone = await call('run_command', { script: 'ls -A /workspace | wc -l', waitMs: 5000 });
      assert.equal(gone.stdout, '0\n');
    });
  });
});
