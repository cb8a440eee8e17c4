import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { pollUntil } from '../helpers/poll.js';
import { type Call, launchRunning, toolCaller, withComputer } from '../unit/computer/fixture.js';

interface Service {
  jobId: string;
  state: string;
  ports: number[];
}

const status = async (call: Call) =>
  (await call('get_computer_status')) as {
    services: Service[];
    listeningPorts: number[];
    preview: {
      status: string;
      message: string | null;
      jobId: string | null;
      jobEnded: { state: string } | null;
    };
  };

const serve = (port: number) => `exec python3 -m http.server ${port} --bind 127.0.0.1`;

describe('long-running services and the agent’s turns (bwrap)', { concurrency: false }, () => {
  it('a background job outlives the timeoutMs that ends an ordinary job, is listed with its port, and cancel_job stops it', async () => {
    await withComputer({}, async ({ manager, ctx }) => {
      await launchRunning(manager, 'python');
      const call = toolCaller(manager, ctx);
      const service = await call('run_command', {
        script: serve(8124),
        background: true,
        timeoutMs: 1000,
        waitMs: 0,
      });
      assert.equal(service.background, true);
      assert.equal(service.state, 'running');
      const peer = await call('run_command', { script: 'sleep 100', timeoutMs: 1000, waitMs: 0 });
      await pollUntil(
        async () => (await call('read_job', { jobId: peer.jobId })).state === 'timed_out',
        'the ordinary job to time out',
        20_000,
      );
      const listed = await pollUntil(
        async () => {
          const s = await status(call);
          const mine = s.services.find((x) => x.jobId === service.jobId);
          return mine?.ports.includes(8124) && s.listeningPorts.includes(8124) ? mine : null;
        },
        'the service and its port in get_computer_status',
        20_000,
      );
      assert.equal(listed.state, 'running');
      assert.equal((await call('read_job', { jobId: service.jobId })).state, 'running');
      await call('cancel_job', { jobId: service.jobId });
      const after = await pollUntil(
        async () => {
          const r = await call('read_job', { jobId: service.jobId });
          return r.terminationObserved ? r : null;
        },
        'the service to end',
        20_000,
      );
      assert.equal(after.state, 'cancelled');
      await pollUntil(
        async () => !(await status(call)).listeningPorts.includes(8124),
        'the port to close',
        20_000,
      );
    });
  });

  it('every result names the job’s state: exited, killed, timed_out, cancelled and running', async () => {
    await withComputer({}, async ({ manager, ctx }) => {
      await launchRunning(manager);
      const call = toolCaller(manager, ctx);
      const ended = async (script: string, timeoutMs = 20_000) => {
        const r = await call('run_command', { script, timeoutMs, waitMs: 0 });
        return pollUntil(
          async () => {
            const now = await call('read_job', { jobId: r.jobId });
            return now.terminationObserved ? now : null;
          },
          script,
          20_000,
        );
      };
      assert.equal((await ended('exit 3')).state, 'exited');
      assert.equal((await ended('kill -9 $$')).state, 'killed');
      assert.equal((await ended('sleep 100', 500)).state, 'timed_out');
      const running = await call('run_command', { script: 'sleep 100', waitMs: 0 });
      assert.equal(running.state, 'running');
      await call('cancel_job', { jobId: running.jobId });
      assert.equal((await call('read_job', { jobId: running.jobId })).state, 'cancelled');
    });
  });

  it('read_job with waitMs answers with output that arrived during the wait, while the job still runs', async () => {
    await withComputer({}, async ({ manager, ctx }) => {
      await launchRunning(manager);
      const call = toolCaller(manager, ctx);
      const job = await call('run_command', { script: 'sleep 1; echo late; sleep 100', waitMs: 0 });
      const first = await call('read_job', { jobId: job.jobId });
      assert.equal(first.stdout, '');
      const waited = await call('read_job', { jobId: job.jobId, cursor: first.nextCursor, waitMs: 10_000 });
      assert.equal(waited.stdout, 'late\n');
      assert.equal(waited.state, 'running');
      // a wait on a job that already ended answers at once with its end
      await call('cancel_job', { jobId: job.jobId });
      const last = await call('read_job', { jobId: job.jobId, cursor: waited.nextCursor, waitMs: 10_000 });
      assert.equal(last.terminationObserved, true);
    });
  });

  it('navigate_preview shows any listening port, warns when its server is not a service, and the preview says when that job ended', async () => {
    await withComputer({}, async ({ manager, ctx }) => {
      await launchRunning(manager, 'python');
      const call = toolCaller(manager, ctx);
      const service = await call('run_command', { script: serve(8125), background: true, waitMs: 0 });
      await pollUntil(async () => (await status(call)).listeningPorts.includes(8125), 'port 8125', 20_000);
      const shown = (await call('navigate_preview', { path: '/', port: 8125 })) as {
        observed: { listening: boolean; jobId: string | null; warning?: string };
        preview: { port: number };
      };
      assert.equal(shown.observed.listening, true);
      assert.equal(shown.observed.jobId, service.jobId);
      assert.equal(shown.observed.warning, undefined);
      assert.equal(shown.preview.port, 8125);
      assert.equal(manager.preview.port(), 8125, 'the relay follows the port navigated to');

      const brief = await call('run_command', { script: serve(8126), timeoutMs: 3000, waitMs: 0 });
      await pollUntil(async () => (await status(call)).listeningPorts.includes(8126), 'port 8126', 20_000);
      const warned = (await call('navigate_preview', { path: '/', port: 8126 })) as {
        observed: { jobId: string | null; warning?: string };
      };
      assert.equal(warned.observed.jobId, brief.jobId);
      assert.match(warned.observed.warning ?? '', /background: true/);
      const preview = await pollUntil(
        async () => {
          const p = (await status(call)).preview;
          return p.jobEnded ? p : null;
        },
        'the preview to tell that its server’s job ended',
        20_000,
      );
      assert.equal(preview.status, 'unreachable');
      assert.equal(preview.jobEnded?.state, 'timed_out');
      assert.match(preview.message ?? '', new RegExp(`${brief.jobId}.*timeout`));
    });
  });
});
