import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Client } from '@modelcontextprotocol/client';
import Database from 'better-sqlite3';
import { connectHttp } from '../helpers/clients.js';
import { type ServeProcess, startServe, type TempProject, tempProject } from '../helpers/paddock-process.js';
import { pollUntil } from '../helpers/poll.js';

interface Job {
  jobId: string;
  stdout: string;
  stderr: string;
  nextCursor: string;
  terminationObserved: boolean;
  toolCalls: number;
}

async function call(
  client: Client,
  name: string,
  args: Record<string, unknown>,
): Promise<Record<string, unknown>> {
  const r = await client.callTool({ name, arguments: args });
  assert.ok(!r.isError, `${name} failed: ${JSON.stringify(r.content)}`);
  return r.structuredContent as Record<string, unknown>;
}

/** Runs a script and reads it by cursor until its end. */
async function runToEnd(client: Client, script: string): Promise<Job> {
  const job = (await call(client, 'run_command', {
    script,
    waitMs: 10_000,
    timeoutMs: 60_000,
  })) as unknown as Job;
  let cursor = job.nextCursor;
  await pollUntil(
    async () => {
      if (job.terminationObserved) return true;
      const part = (await call(client, 'read_job', { jobId: job.jobId, cursor })) as unknown as Job;
      job.stdout += part.stdout;
      job.stderr += part.stderr;
      job.terminationObserved = part.terminationObserved;
      job.toolCalls = part.toolCalls;
      cursor = part.nextCursor;
      return false;
    },
    `job ${job.jobId} to end`,
    60_000,
    50,
  );
  return job;
}

/** The host pid of the process whose command line is exactly `cmd`, or null. */
function victimHostPid(cmd: string): number | null {
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (readFileSync(`/proc/${entry}/cmdline`, 'utf8').replaceAll('\0', ' ').trim() === cmd)
        return Number(entry);
    } catch {
      // gone meanwhile
    }
  }
  return null;
}

describe('two MCP sessions on one computer: a job of one cannot act as the other', () => {
  let project: TempProject;
  let serve: ServeProcess;
  let alice: Client;
  let mallory: Client;

  before(async () => {
    project = tempProject('computer:\n  defaultProfile: python\n');
    serve = await startServe(project);
    // both name one computer: they share it, so mallory's jobs run beside alice's
    alice = await connectHttp(serve.url, serve.token, 'alice', { computer: 'shared' });
    mallory = await connectHttp(serve.url, serve.token, 'mallory', { computer: 'shared' });
    await call(alice, 'launch_computer', { profileId: 'python' });
    await pollUntil(
      async () => (await call(alice, 'get_computer_status', {})).lifecycle === 'running',
      'computer running',
      30_000,
      50,
    );
  });

  after(async () => {
    await alice?.close().catch(() => undefined);
    await mallory?.close().catch(() => undefined);
    await serve?.stop();
    project?.cleanup();
  });

  it('a tool call only ever runs as the caller whose command made it', async () => {
    const marker = `sleep 40.${process.pid}`;
    const victim = (await call(alice, 'run_command', {
      script: marker,
      waitMs: 100,
      timeoutMs: 60_000,
    })) as unknown as Job;
    // from inside, the victim's environment is out of reach (a Landlock domain per job, see
    // computer-job-isolation.test.ts); the test reads its nonce from the host instead, to show
    // that even a known nonce makes no call
    const hostPid = await pollUntil(
      async () => victimHostPid(marker),
      `the victim's ${marker} on the host`,
      30_000,
      50,
    );
    const nonce = /(?:^|\0)PADDOCK_CHANNEL=([^\0]*)/.exec(
      readFileSync(`/proc/${hostPid}/environ`, 'latin1'),
    )?.[1];
    assert.ok(nonce, 'the victim job has a channel nonce');
    const attack = [
      `V=$(for p in /proc/[0-9]*; do [ "$(tr '\\0' ' ' < $p/cmdline 2>/dev/null)" = '${marker} ' ] && echo \${p#/proc/}; done | head -n1)`,
      "READ=$(tr '\\0' '\\n' < /proc/$V/environ 2>/dev/null | sed -n 's/^PADDOCK_CHANNEL=//p')",
      // biome-ignore lint/suspicious/noTemplateCurlyInString: shell parameter expansion
      'echo "victim found: ${V:+yes}, its nonce read: ${READ:+yes}"',
      // biome-ignore lint/suspicious/noTemplateCurlyInString: shell parameter expansion
      'AGENT=$(for p in /proc/[0-9]*; do grep -q agent.js $p/cmdline 2>/dev/null && echo ${p#/proc/}; done | head -n1)',
      'kill -USR1 $AGENT 2>/dev/null && echo "signalled the agent"',
      `python3 -c "import socket; socket.create_connection(('127.0.0.1', 9229), 2)" 2>/dev/null && echo "inspector open"`,
      '(printf x > /proc/$AGENT/fd/1) 2>/dev/null && echo "wrote on the agent link"',
      // a frame with the victim's nonce on this job's own stderr: never a call
      `PADDOCK_CHANNEL=${nonce} timeout 5 paddock-tool call save_memory '{"content":"forged by mallory"}' >/dev/null; echo "forged=$?"`,
      `paddock-tool call save_memory '{"content":"honest note by mallory"}' >/dev/null; echo "honest=$?"`,
    ].join('\n');
    const job = await runToEnd(mallory, attack);
    const lines = job.stdout.trim().split('\n');
    assert.deepEqual(
      lines,
      ['victim found: yes, its nonce read: ', 'forged=124', 'honest=0'],
      job.stdout + job.stderr,
    );
    assert.equal(job.toolCalls, 1);
    // the forged frame was written, and stayed ordinary output of the job that wrote it
    assert.match(job.stderr, /\x1b_paddock;[A-Za-z0-9_-]+;/);

    const db = new Database(join(project.dataDir, 'paddock.db'), { readonly: true });
    try {
      const rows = db
        .prepare("SELECT tool, job_id AS jobId, input FROM tool_invocations WHERE via = 'channel'")
        .all() as { tool: string; jobId: string; input: string }[];
      assert.equal(rows.length, 1, JSON.stringify(rows));
      assert.equal(rows[0]!.jobId, job.jobId, 'the channel call is blamed on the job that made it');
      assert.match(rows[0]!.input, /honest note/);
    } finally {
      db.close();
    }
    const read = (await call(alice, 'read_job', { jobId: victim.jobId })) as unknown as Job;
    assert.equal(read.toolCalls, 0, "nothing ran on the victim's channel");
    const found = await call(alice, 'recall_memory', { query: 'forged' });
    assert.doesNotMatch(JSON.stringify(found), /forged by mallory/);
    await call(alice, 'cancel_job', { jobId: victim.jobId });
  });
});
