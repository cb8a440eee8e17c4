/**
 * Jobs and terminals of one computer run as one account, so the kernel alone would let any of
 * them read another's environment (its tool-channel nonce) and write another's memory through
 * /proc. Each job and terminal therefore runs in its own Landlock domain: a process may still
 * inspect its own descendants, never a sibling job's processes nor the guest agent's.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { pollUntil } from '../helpers/poll.js';
import { launchRunning, runUntilExit, toolCaller, withComputer } from '../unit/computer/fixture.js';

/** What a job can do to the process whose command line is exactly `cmd` (one word each). */
function probeScript(cmd: string): string {
  return `
p=$(pgrep -xf '${cmd}' | head -1)
[ -n "$p" ] || { echo no-target; exit 3; }
cat /proc/$p/environ >/dev/null 2>&1 && echo environ-readable || echo environ-denied
python3 -c "open('/proc/$p/mem', 'r+b')" 2>/dev/null && echo mem-writable || echo mem-denied
grep -q . /proc/$p/cmdline && echo cmdline-visible
sleep 30 & c=$!
cat /proc/$c/environ >/dev/null 2>&1 && echo own-child-environ-readable
kill $c
`;
}

describe('isolation between the jobs of one computer', { concurrency: false }, () => {
  it("keeps one job out of another's environment and memory, and out of the guest agent's", async () => {
    await withComputer({}, async ({ manager }) => {
      await launchRunning(manager);
      const marker = `sleep 60.${process.pid}`;
      const target = await manager.runCommand({
        script: marker,
        env: { SECRET_OF_B: 'b-secret' },
        waitMs: 0,
        timeoutMs: 120_000,
      });
      try {
        await pollUntil(
          async () => (await runUntilExit(manager, `pgrep -xf '${marker}'`)).exitCode === 0,
          'the target job to start',
          20_000,
        );
        const r = await runUntilExit(manager, probeScript(marker));
        assert.equal(r.exitCode, 0, r.stdout + r.stderr);
        const seen = r.stdout.trim().split('\n');
        assert.deepEqual(seen, [
          'environ-denied',
          'mem-denied',
          'cmdline-visible',
          'own-child-environ-readable',
        ]);
        const agent = await runUntilExit(
          manager,
          `p=$(pgrep -f guest/agent.js | head -1); cat /proc/$p/environ >/dev/null 2>&1 && echo agent-environ-readable || echo agent-environ-denied`,
        );
        assert.equal(agent.stdout.trim(), 'agent-environ-denied');
      } finally {
        await manager.cancelJob(target.jobId);
      }
    });
  });

  it("keeps a job out of a terminal's processes, and a terminal out of a job's", async () => {
    await withComputer({}, async (f) => {
      await launchRunning(f.manager);
      const call = toolCaller(f.manager, f.ctx);
      const marker = `sleep 61.${process.pid}`;
      const term = await call('create_terminal', {});
      const terminalId = String(term.terminalId);
      await call('send_terminal_input', { terminalId, text: `${marker}\n` });
      await pollUntil(
        async () => (await runUntilExit(f.manager, `pgrep -xf '${marker}'`)).exitCode === 0,
        'the sleep typed into the terminal to start',
        20_000,
      );
      const fromJob = await runUntilExit(f.manager, probeScript(marker));
      assert.deepEqual(fromJob.stdout.trim().split('\n').slice(0, 2), ['environ-denied', 'mem-denied']);
      // and the other way round: the terminal's shell probes a job's process
      const jobMarker = `sleep 62.${process.pid}`;
      const job = await f.manager.runCommand({ script: jobMarker, waitMs: 0, timeoutMs: 120_000 });
      try {
        // the job's shell starts its sleep a moment after the job starts: wait for it, or the
        // terminal's pgrep finds nothing and the probe never names a pid
        await pollUntil(
          async () => (await runUntilExit(f.manager, `pgrep -xf '${jobMarker}'`)).exitCode === 0,
          "the job's sleep to start",
          20_000,
        );
        await call('send_terminal_input', { terminalId, key: 'ctrl_c' });
        await call('send_terminal_input', {
          terminalId,
          text: `p=$(pgrep -xf '${jobMarker}'); cat /proc/$p/environ >/dev/null 2>&1 && echo T-READ || echo T-DENIED-$p\n`,
        });
        await pollUntil(
          async () => {
            const out = String(
              (await call('read_terminal_output', { terminalId, byteLimit: 65_536 })).output,
            );
            return /T-DENIED-\d+/.test(out) || /^T-READ/m.test(out) ? out : null;
          },
          'the terminal to answer',
          20_000,
        ).then((out) => assert.match(out, /T-DENIED-\d+/, out));
      } finally {
        await f.manager.cancelJob(job.jobId);
      }
    });
  });
});
