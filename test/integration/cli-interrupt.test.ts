import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import {
  PADDOCK_BIN,
  runCli,
  startServe,
  type TempProject,
  tempProject,
} from '../helpers/paddock-process.js';
import { pollUntil } from '../helpers/poll.js';

/** Host pids whose command line is `needle` (the computer's processes are visible from the host). */
function pidsRunning(needle: string): number[] {
  const pids: number[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const cmd = readFileSync(`/proc/${name}/cmdline`, 'utf8').replaceAll('\0', ' ');
      if (cmd.trim() === needle) pids.push(Number(name));
    } catch {
      // gone meanwhile
    }
  }
  return pids;
}

/** Starts `paddock tools call run_command` with `script`, presses Ctrl-C once it runs, and returns what it said. */
async function interruptRunCommand(
  project: TempProject,
  script: string,
  marker: string,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(
    process.execPath,
    [
      PADDOCK_BIN,
      'tools',
      'call',
      'run_command',
      JSON.stringify({ script, waitMs: 10_000, timeoutMs: 300_000 }),
    ],
    { cwd: project.dir, env: project.env, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => {
    stdout += d.toString();
  });
  child.stderr.on('data', (d: Buffer) => {
    stderr += d.toString();
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  await pollUntil(() => pidsRunning(marker).length > 0, 'the job to run', 30_000);
  child.kill('SIGINT');
  const code = await exited;
  return { code, stdout, stderr };
}

describe('Ctrl-C of a CLI tool call', { concurrency: false }, () => {
  it('Ctrl-C on `paddock tools call run_command` names the job and cancels it, in the running server', async () => {
    const project = tempProject();
    const serve = await startServe(project);
    try {
      const launched = await runCli(project, ['tools', 'call', 'launch_computer', '{"profileId":"shell"}']);
      assert.equal(launched.code, 0, launched.stderr);
      await pollUntil(
        async () =>
          (await runCli(project, ['tools', 'call', 'get_computer_status', '{}'])).stdout.includes(
            '"running"',
          ),
        'the computer to run',
      );
      const r = await interruptRunCommand(project, 'sleep 987654', 'sleep 987654');
      assert.equal(r.code, 130, `stdout: ${r.stdout}\nstderr: ${r.stderr}`);
      assert.match(r.stderr, /cancelled job g\d+\.job\d+/i, r.stderr);
      await pollUntil(() => pidsRunning('sleep 987654').length === 0, 'the job’s process to end', 15_000);
    } finally {
      await serve.stop();
      project.cleanup();
    }
  });
});
