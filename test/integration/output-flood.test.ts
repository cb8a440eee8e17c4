/**
 * An output flood does not grow the server: a real `paddock serve` process runs jobs that flood
 * stdout, stderr and one endless line with no newline, and a terminal that floods its PTY, each of
 * hundreds of MiB, while its peak RSS is read from the kernel (VmHWM, reset before each flood
 * through /proc's clear_refs, and VmRSS sampled meanwhile). (That every byte still reaches the host, and reads behind retention
 * are OUTPUT_EXPIRED, is computer-jobs.test.ts's.)
 */
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import type { Client } from '@modelcontextprotocol/client';
import { connectHttp } from '../helpers/clients.js';
import { startServe, tempProject } from '../helpers/paddock-process.js';
import { pollUntil } from '../helpers/poll.js';

const MIB = 1024 * 1024;
/** What the server may grow by during one flood. */
const GROWTH_LIMIT_BYTES = 64 * MIB;

type Structured = Record<string, unknown>;

async function call(client: Client, name: string, args: Record<string, unknown>): Promise<Structured> {
  const r = await client.callTool({ name, arguments: args });
  assert.notEqual(r.isError, true, `${name} failed: ${JSON.stringify(r.content).slice(0, 500)}`);
  return (r.structuredContent ?? JSON.parse((r.content as { text: string }[])[0]!.text)) as Structured;
}

/** A field of /proc/<pid>/status in bytes (VmRSS, VmHWM). */
function statusBytes(pid: number, field: string): number {
  const m = new RegExp(`${field}:\\s+(\\d+) kB`).exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  assert.ok(m, `no ${field} in /proc/${pid}/status`);
  return Number(m[1]) * 1024;
}

/** Resets the process's peak RSS to its current RSS and returns that. */
function resetPeak(pid: number): number {
  writeFileSync(`/proc/${pid}/clear_refs`, '5');
  return statusBytes(pid, 'VmRSS');
}

/**
 * The server's peak RSS while `work` runs, above what it was before: the kernel's own peak
 * (VmHWM) and RSS sampled every few milliseconds, whichever is higher.
 */
async function peakGrowth(pid: number, work: () => Promise<unknown>): Promise<number> {
  const before = resetPeak(pid);
  let sampled = before;
  const sampler = setInterval(() => {
    sampled = Math.max(sampled, statusBytes(pid, 'VmRSS'));
  }, 5);
  try {
    await work();
  } finally {
    clearInterval(sampler);
  }
  return Math.max(sampled, statusBytes(pid, 'VmHWM')) - before;
}

/** Runs `script` as a job and waits until its end is observed (reading little: the flood stays on the host). */
async function runFlood(client: Client, script: string): Promise<Structured> {
  const job = await call(client, 'run_command', { script, waitMs: 0, timeoutMs: 300_000 });
  return pollUntil(
    async () => {
      const r = await call(client, 'read_job', { jobId: job.jobId, byteLimit: 16 });
      return r.terminationObserved === true ? r : null;
    },
    `the flood ${script}`,
    600_000,
    250,
  ) as Promise<Structured>;
}

describe('an output flood and the server’s memory', () => {
  it('grows the server by less than 64 MiB for a flood of stdout, of stderr, of one endless line, and of a terminal', async (t) => {
    if (process.getuid?.() !== 0) {
      t.skip('resetting a process’s peak RSS (clear_refs) needs root');
      return;
    }
    const project = tempProject('computer:\n  defaultProfile: shell\n');
    const serve = await startServe(project);
    let client: Client | null = null;
    try {
      const pid = JSON.parse(readFileSync(join(project.dataDir, 'run', 'server.json'), 'utf8')).pid as number;
      client = await connectHttp(serve.url, serve.token, 'flood');
      const c = client;
      await call(c, 'launch_computer', { profileId: 'shell' });
      await pollUntil(
        async () => (await call(c, 'get_computer_status', {})).lifecycle === 'running',
        'the computer to run',
        120_000,
      );
      // a first, smaller flood of each kind: the server's one-time costs (code, retention rings) are paid
      await runFlood(c, 'head -c 33554432 /dev/zero; head -c 33554432 /dev/zero >&2');
      const floods: [string, string][] = [
        ['stdout', 'head -c 536870912 /dev/zero'],
        ['stderr', 'head -c 536870912 /dev/zero >&2'],
        ['one endless line', "head -c 536870912 /dev/zero | tr '\\0' x"],
      ];
      const growth: Record<string, number> = {};
      for (const [name, script] of floods) {
        growth[name] = await peakGrowth(pid, async () => {
          const r = await runFlood(c, script);
          assert.equal(r.exitCode, 0, `${name}: ${String(r.stderr).slice(0, 300)}`);
        });
      }
      const term = await call(c, 'create_terminal', {});
      const terminalId = String(term.terminalId);
      growth.terminal = await peakGrowth(pid, async () => {
        await call(c, 'send_terminal_input', {
          terminalId,
          text: "head -c 268435456 /dev/zero | tr '\\0' y; echo; touch /workspace/terminal-flood-done\n",
        });
        await pollUntil(
          async () =>
            (await call(c, 'run_command', { script: 'test -f /workspace/terminal-flood-done' })).exitCode ===
            0,
          'the terminal flood to end',
          600_000,
          500,
        );
      });
      const shown = Object.entries(growth).map(([k, v]) => `${k} ${(v / MIB).toFixed(1)} MiB`);
      console.error(`server peak RSS growth per flood: ${shown.join(', ')}`);
      for (const [name, bytes] of Object.entries(growth)) {
        assert.ok(bytes < GROWTH_LIMIT_BYTES, `${name} grew the server by ${(bytes / MIB).toFixed(1)} MiB`);
      }
    } finally {
      await client?.close().catch(() => undefined);
      await serve.stop();
      project.cleanup();
    }
  });
});
