/**
 * A checkpoint of a running computer is one moment of it: its processes are frozen (cgroup) for
 * the walk, so files a job writes one after the other are never caught at different moments, and
 * the job goes on once the checkpoint is taken.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { pollUntil } from '../helpers/poll.js';
import { launchRunning, toolCaller, withComputer } from '../unit/computer/fixture.js';

/** A job that counts, writing each count to `a`, then to `b`, each by an atomic rename. */
const COUNTER =
  'cd /workspace && i=0; while :; do i=$((i+1)); echo $i > a.t; mv a.t a; echo $i > b.t; mv b.t b; done';

describe('a checkpoint is one moment of the computer (bwrap, cgroups)', { concurrency: false }, () => {
  it('files a job writes one after the other are caught at the same moment, and the job runs on after', async () => {
    await withComputer({}, async ({ manager, ctx }) => {
      await launchRunning(manager);
      const call = toolCaller(manager, ctx);
      await call('run_command', { script: COUNTER, background: true, waitMs: 0, timeoutMs: 600_000 });
      const ws = manager.computer!.hostWorkspace;
      const count = (name: string) => Number(readFileSync(join(ws, name), 'utf8').trim() || '0');
      await pollUntil(() => {
        try {
          return count('b') > 10;
        } catch {
          return false;
        }
      }, 'the counter to start');
      const { store, key } = manager.checkpoints;
      const out = mkdtempSync(join(tmpdir(), 'paddock-pause-'));
      try {
        // the first checkpoint is copied while the job runs, then finished frozen; the others are frozen walks
        for (let round = 0; round < 6; round++) {
          const taken = await call('checkpoint_computer', {});
          assert.equal(typeof taken.pausedMs, 'number', 'the computer was frozen for the walk');
          const dest = join(out, String(round));
          await store.restore(key, String(taken.checkpointId), dest);
          const a = Number(readFileSync(join(dest, 'a'), 'utf8'));
          const b = Number(readFileSync(join(dest, 'b'), 'utf8'));
          assert.ok(a === b || a === b + 1, `round ${round}: a=${a} b=${b} were caught at different moments`);
          const after = count('b');
          await pollUntil(() => count('b') > after, 'the job to run on after the checkpoint');
        }
      } finally {
        rmSync(out, { recursive: true, force: true });
      }
    });
  });
});
