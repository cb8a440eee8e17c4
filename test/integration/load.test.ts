/**
 * Load: many jobs, tool-channel calls from inside them, terminals streaming and several MCP
 * clients at once. Nothing fails, every call is audited, and the figures (peak RSS of the server,
 * p99 of get_computer_status idle and under load) are printed, never asserted. LOAD_SCALE=1 is the
 * issue's full size (50 jobs, 1,000 channel calls, 8 terminals, 16 clients); the default is a
 * fifth of it, a few seconds on two cores.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { setTimeout as delay } from 'node:timers/promises';
import type { Client } from '@modelcontextprotocol/client';
import { rows } from '../helpers/audit-rows.js';
import { connectHttp } from '../helpers/clients.js';
import { startServe, tempProject } from '../helpers/paddock-process.js';
import { pollUntil } from '../helpers/poll.js';

const SCALE = Number(process.env.LOAD_SCALE ?? 0.2);
const JOBS = Math.max(5, Math.round(50 * SCALE));
const CHANNEL_CALLS = Math.max(50, Math.round(1000 * SCALE));
const TERMINALS = Math.max(2, Math.round(8 * SCALE));
const CLIENTS = Math.max(4, Math.round(16 * SCALE));
const STATUS_SAMPLES = 100;

type Structured = Record<string, unknown>;

async function call(client: Client, name: string, args: Record<string, unknown>): Promise<Structured> {
  const r = await client.callTool({ name, arguments: args });
  assert.notEqual(r.isError, true, `${name} failed: ${JSON.stringify(r.content).slice(0, 500)}`);
  return (r.structuredContent ?? JSON.parse((r.content as { text: string }[])[0]!.text)) as Structured;
}

/** Runs a command and reads it by cursor until it has ended; its stdout and exit code. */
async function runToEnd(client: Client, script: string): Promise<{ stdout: string; exitCode: unknown }> {
  const job = await call(client, 'run_command', { script, waitMs: 10_000, timeoutMs: 240_000 });
  let stdout = String(job.stdout ?? '');
  let cursor = job.nextCursor;
  let ended = job.terminationObserved === true;
  let exitCode = job.exitCode;
  while (!ended) {
    await delay(100);
    const part = await call(client, 'read_job', { jobId: job.jobId, cursor, byteLimit: 65536 });
    stdout += String(part.stdout ?? '');
    cursor = part.nextCursor;
    ended = part.terminationObserved === true;
    exitCode = part.exitCode;
  }
  return { stdout, exitCode };
}

/** p99 of `samples` get_computer_status round trips, in milliseconds. */
async function statusP99(client: Client): Promise<number> {
  const times: number[] = [];
  for (let i = 0; i < STATUS_SAMPLES; i++) {
    const t0 = performance.now();
    await call(client, 'get_computer_status', {});
    times.push(performance.now() - t0);
  }
  times.sort((a, b) => a - b);
  return times[Math.min(times.length - 1, Math.floor(times.length * 0.99))]!;
}

function peakRssMiB(pid: number): number {
  const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return Math.round(Number(m?.[1] ?? 0) / 1024);
}

describe('the server under load', () => {
  it('runs jobs, channel calls, terminals and clients at once without an error, and audits every call', async (t) => {
    const project = tempProject('computer:\n  defaultProfile: shell\n');
    const serve = await startServe(project);
    const clients: Client[] = [];
    try {
      const pid = JSON.parse(readFileSync(join(project.dataDir, 'run', 'server.json'), 'utf8')).pid as number;
      // every client names one computer, so the load meets in it
      for (let k = 0; k < CLIENTS; k++)
        clients.push(await connectHttp(serve.url, serve.token, `load-${k}`, { computer: 'load' }));
      const first = clients[0]!;
      await call(first, 'launch_computer', { profileId: 'shell' });
      await pollUntil(
        async () => (await call(first, 'get_computer_status', {})).lifecycle === 'running',
        'the computer to run',
        120_000,
      );
      const idleP99 = await statusP99(first);

      const channelJobs = Math.ceil(CHANNEL_CALLS / 50);
      const perJob = Math.ceil(CHANNEL_CALLS / channelJobs);
      const work: Promise<unknown>[] = [];
      // jobs: some make tool-channel calls from inside the computer, the rest write output
      for (let j = 0; j < JOBS; j++) {
        const client = clients[j % CLIENTS]!;
        const script =
          j < channelJobs
            ? `for i in $(seq 1 ${perJob}); do paddock-tool call save_memory "{\\"content\\":\\"load j${j} n$i\\"}" >/dev/null || exit 9; done; echo calls-done-${j}`
            : `head -c 200000 /dev/urandom | od -An -tx1 | tail -n 1 >/dev/null; echo job-done-${j}`;
        work.push(
          runToEnd(client, script).then((r) => {
            assert.equal(
              r.exitCode,
              0,
              `job ${j} exited with ${String(r.exitCode)}: ${r.stdout.slice(-300)}`,
            );
            assert.match(r.stdout, new RegExp(`(calls|job)-done-${j}\\b`));
          }),
        );
      }
      // terminals stream output while the jobs run
      for (let k = 0; k < TERMINALS; k++) {
        const client = clients[(k + 1) % CLIENTS]!;
        work.push(
          (async () => {
            const term = await call(client, 'create_terminal', { activate: false });
            const terminalId = term.terminalId as string;
            await call(client, 'send_terminal_input', {
              terminalId,
              text: `seq 1 20000 | tail -n 3; echo term-$((40+${k}))-done\n`,
            });
            let cursor: unknown;
            let seen = '';
            await pollUntil(
              async () => {
                const read = await call(client, 'read_terminal_output', {
                  terminalId,
                  byteLimit: 65536,
                  ...(cursor ? { cursor } : {}),
                });
                seen += String(read.output);
                cursor = read.nextCursor;
                return seen.includes(`term-${40 + k}-done`);
              },
              `terminal ${k} to finish its command`,
              240_000,
            );
          })(),
        );
      }
      const loadP99 = statusP99(clients[CLIENTS - 1]!);
      await Promise.all(work);
      const underLoad = await loadP99;
      t.diagnostic(
        `${JOBS} jobs, ${channelJobs * perJob} channel calls, ${TERMINALS} terminals, ${CLIENTS} clients; ` +
          `peak server RSS ${peakRssMiB(pid)} MiB; get_computer_status p99 idle ${idleP99.toFixed(1)} ms, ` +
          `under load ${underLoad.toFixed(1)} ms`,
      );

      const all = rows(project.dataDir);
      const channelRows = all.filter((r) => r.tool === 'save_memory' && r.via === 'channel');
      assert.equal(channelRows.length, channelJobs * perJob, 'every channel call has its row');
      assert.ok(channelRows.every((r) => r.success && r.state === 'ended'));
      assert.equal(all.filter((r) => r.tool === 'run_command').length, JOBS);
      assert.equal(all.filter((r) => r.tool === 'create_terminal').length, TERMINALS);
      assert.equal(all.filter((r) => r.tool === 'get_computer_status').length >= STATUS_SAMPLES * 2, true);
      assert.equal(all.filter((r) => r.state === 'running').length, 0, 'no row is left running');
      assert.deepEqual(
        all.filter((r) => !r.success).map((r) => `${r.tool}: ${r.errorMessage}`),
        [],
        'no call failed',
      );
    } finally {
      for (const c of clients) await c.close().catch(() => {});
      await serve.stop();
      project.cleanup();
    }
  });
});
