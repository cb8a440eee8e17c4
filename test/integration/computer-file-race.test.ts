import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { pollUntil } from '../helpers/poll.js';
import { launchRunning, toolCaller, withComputer } from '../unit/computer/fixture.js';

const policy = { files: { read: ['/workspace'], write: ['/workspace'] } };

// /workspace/d flips between a real directory and a symlink to /etc as fast as it can
const SWAPPER = `python3 - <<'PY'
import os
os.makedirs('/workspace/real', exist_ok=True)
with open('/workspace/real/hostname', 'w') as f:
    f.write('inside\\n')
print('swapping', flush=True)
while not os.path.exists('/workspace/stop'):
    for step in (lambda: os.rename('/workspace/real', '/workspace/d'),
                 lambda: os.rename('/workspace/d', '/workspace/real'),
                 lambda: os.symlink('/etc', '/workspace/d'),
                 lambda: os.unlink('/workspace/d')):
        try:
            step()
        except OSError:
            pass
PY`;

describe('file tools against a racing symlink swap', { concurrency: false }, () => {
  it('never writes or reads outside the allowed roots while a job swaps a path component between a directory and a symlink', async () => {
    await withComputer({ policy }, async ({ manager, ctx }) => {
      const call = toolCaller(manager, ctx);
      await launchRunning(manager);
      const swapper = await manager.runCommand({ script: SWAPPER, waitMs: 200, timeoutMs: 300_000 });
      await pollUntil(
        () => manager.readJob(swapper.jobId, undefined, 4096).stdout.includes('swapping'),
        'the swapper to start',
        20_000,
      );
      const leaked: string[] = [];
      // At least 40 rounds, and on until some write met the path as a directory (how the race
      // falls depends on the machine's speed, not on the code under test).
      let written = 0;
      for (let round = 0; round < 40 || (written === 0 && round < 2000); round++) {
        await Promise.all(
          Array.from({ length: 8 }, async (_, i) => {
            const n = round * 8 + i;
            await call('write_file', { path: `/workspace/d/f${n}.txt`, content: 'x', overwrite: true }).then(
              () => {
                written++;
              },
              () => undefined,
            );
            const r = await call('read_file', { path: '/workspace/d/hostname' }).catch(() => null);
            if (r && r.content !== 'inside\n') leaked.push(String(r.content));
          }),
        );
      }
      await call('write_file', { path: '/workspace/stop', content: '', overwrite: true });
      const outside = await manager.runCommand({
        script: 'ls -A /etc | grep -c "^f[0-9]*\\.txt$"; ls /workspace/real | grep -c "^f[0-9]*\\.txt$"',
        waitMs: 10_000,
        timeoutMs: 20_000,
      });
      const [inEtc, inside] = outside.stdout.trim().split('\n').map(Number);
      assert.equal(inEtc, 0, 'a write landed in /etc, outside the allowed roots');
      assert.deepEqual(leaked, [], 'a read returned a file outside the allowed roots');
      assert.ok((inside ?? 0) > 0, 'some writes went through while the path was a directory');
    });
  });
});
