import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { spareArgv, spareJob } from '../../../src/guest/job-scripts.js';
import type { CallArgs } from '../../../src/guest/protocol.js';

interface Run {
  stdout: string;
  stderr: string;
  code: number | null;
}

/** Runs argv with `input` on fd 3 (the hold pipe) and empty stdin, as the agent does. */
function run(argv: string[], env: Record<string, string>, cwd: string, input?: string): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(argv[0]!, argv.slice(1), { cwd, env, stdio: ['ignore', 'pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout!.on('data', (b) => (stdout += b));
    child.stderr!.on('data', (b) => (stderr += b));
    child.on('error', reject);
    child.on('close', (code) => resolve({ stdout, stderr, code }));
    const hold = child.stdio[3] as NodeJS.WritableStream;
    hold.on('error', () => undefined);
    hold.end(input ?? '');
  });
}

describe('the spare shell: a job handed over the hold pipe runs as if it had been started anew', () => {
  const dir = mkdtempSync(join(tmpdir(), 'paddock-spare-'));
  const init = join(dir, 'init.sh');
  writeFileSync(init, 'unset BASH_ENV ENV\nFROM_INIT=yes\n');
  const script = [
    'echo "0=$0 line=$LINENO pwd=$PWD"',
    'env | grep -v "^_=" | sort',
    'echo "init=$FROM_INIT s=${s-unset} p=${p-unset} n=${n-unset}"',
    'no_such_command_here',
    'exit 7',
  ].join('\n');
  const env = { HOME: dir, PATH: '/usr/bin:/bin', A_VALUE: "it's\nmultiline $x `y`", BASH_ENV: init };
  const args = (argv: string[]): CallArgs<'exec'> => ({
    stream: 1,
    argv,
    cwd: dir,
    env,
    rlimits: { openFiles: 256 },
    hold: true,
    newSession: false,
  });

  it('a bash spare runs `bash --noprofile --norc -c SCRIPT` with its cwd, environment, BASH_ENV, $0, line numbers, stderr and exit code', async () => {
    const argv = ['/bin/bash', '--noprofile', '--norc', '-c', script];
    const fresh = await run(argv, env, dir);
    const spare = await run(
      spareArgv({ openFiles: 256 }, '/bin/bash'),
      {},
      '/',
      spareJob(args(argv), '/bin/bash'),
    );
    assert.equal(fresh.code, 7);
    assert.deepEqual(spare, fresh);
    assert.match(spare.stdout, /A_VALUE=it's\n/);
    assert.match(spare.stdout, /^multiline \$x `y`$/m);
    assert.match(spare.stderr, /line 4: no_such_command_here/);
    assert.match(spare.stdout, /init=yes s=unset p=unset/);
  });

  it('an sh spare execs any other argv with exactly the job environment', async () => {
    const argv = ['/bin/sh', '-c', script];
    const { BASH_ENV: _, ...plain } = env;
    const fresh = await run(argv, plain, dir);
    const job = { ...args(argv), env: plain };
    const spare = await run(spareArgv({ openFiles: 256 }, undefined), {}, '/', spareJob(job, undefined));
    assert.equal(fresh.code, 7);
    assert.deepEqual(spare, fresh);
  });

  it('a spare that gets no job exits with 126 and runs nothing', async () => {
    for (const shell of ['/bin/bash', undefined]) {
      const r = await run(spareArgv({}, shell), {}, '/');
      assert.deepEqual(r, { stdout: '', stderr: '', code: 126 }, `shell ${shell}`);
    }
    rmSync(dir, { recursive: true, force: true });
  });
});
