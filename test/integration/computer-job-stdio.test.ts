import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { JobResult } from '../../src/computer/jobs/job.js';
import type { ComputerManager } from '../../src/computer/manager.js';
import { pollUntil } from '../helpers/poll.js';
import { launchRunning, withComputer } from '../unit/computer/fixture.js';

async function finished(manager: ComputerManager, jobId: string): Promise<JobResult> {
  return pollUntil(
    () => {
      const r = manager.readJob(jobId, undefined, 65_536);
      return r.terminationObserved ? r : null;
    },
    `termination of ${jobId}`,
    20_000,
  );
}

const SCRIPT = [
  'echo to-err > /dev/stderr',
  'echo teed | tee /dev/stderr',
  'echo to-out > /dev/stdout',
  'echo fd-err >> /dev/fd/2',
  "sh -c 'echo nested > /proc/self/fd/1'",
].join(' &&\n');

describe('job stdio (bwrap)', { concurrency: false }, () => {
  it('a job can reopen its own stdout and stderr through /dev/stdout, /dev/stderr and /dev/fd, on every kind of start', async () => {
    await withComputer({}, async ({ manager }) => {
      await launchRunning(manager);
      // the first jobs of a computer and those after it start in different ways (spare shells)
      for (let round = 0; round < 4; round++) {
        const job = await manager.runCommand({ script: SCRIPT, waitMs: 0, timeoutMs: 20_000 });
        const r = await finished(manager, job.jobId);
        assert.equal(r.exitCode, 0, `round ${round} (${job.jobId}): ${r.stderr}`);
        assert.equal(r.stdout, 'teed\nto-out\nnested\n', `round ${round}`);
        assert.equal(r.stderr, 'to-err\nteed\nfd-err\n', `round ${round}`);
      }
    });
  });

  it('a job started with a custom working directory and environment reopens /dev/stderr too', async () => {
    await withComputer({}, async ({ manager }) => {
      await launchRunning(manager);
      const job = await manager.runCommand({
        script: 'echo "$X" > /dev/stderr',
        cwd: '/tmp',
        env: { X: 'hello' },
        waitMs: 0,
        timeoutMs: 20_000,
      });
      const r = await finished(manager, job.jobId);
      assert.equal(r.exitCode, 0, r.stderr);
      assert.equal(r.stderr, 'hello\n');
    });
  });
});
