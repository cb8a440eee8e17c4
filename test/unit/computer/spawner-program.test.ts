import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { describe, it } from 'node:test';
import { spawnerProgram } from '../../../src/computer/backend/bwrap/spawner-program.js';
import { type SpawnedProcess, Spawner } from '../../../src/guest/spawner.js';
import { withHostProgram } from '../../helpers/host-program.js';

/** Runs `fn` with the program written to a temporary file (skipped where there is none). */
function withSpawner(
  t: { skip(reason: string): void },
  fn: (path: string) => void | Promise<void>,
): Promise<void> {
  return withHostProgram(t, 'paddock-spawner', spawnerProgram(), fn);
}

interface Outcome {
  stdout: string;
  stderr: string;
  code: number | null;
  signal: string | null;
}

/** Hands `job` to a spare over its hold socket and collects what it prints and how it ends. */
function finish(spare: SpawnedProcess, job: string): Promise<Outcome> {
  let stdout = '';
  let stderr = '';
  spare.stdout.on('data', (b: Buffer) => (stdout += b));
  spare.stderr.on('data', (b: Buffer) => (stderr += b));
  const exited = new Promise<[number | null, string | null]>((resolve) =>
    spare.on('exit', (code: number | null, signal: string | null) => resolve([code, signal])),
  );
  const closed = new Promise<void>((resolve) => spare.once('close', resolve));
  spare.stdio[3].end(job);
  return Promise.all([exited, closed]).then(([[code, signal]]) => ({ stdout, stderr, code, signal }));
}

/** A spare that reads one line from its hold socket (fd 3) and evaluates it. */
const SPARE = ['/bin/sh', '-c', 'IFS= read -r line <&3; eval "$line"'];

describe('paddock-spawner, the process that forks spare shells for the guest agent', () => {
  it('is a static x86-64 executable of a few hundred bytes, and none elsewhere', () => {
    const program = spawnerProgram('x64')!;
    assert.equal(program.subarray(0, 4).toString('latin1'), '\x7fELF');
    assert.equal(program.readUInt16LE(18), 0x3e);
    assert.ok(program.length < 4096, `${program.length} bytes`);
    assert.equal(spawnerProgram('arm64'), null);
  });

  it('gives each spare its own session, its own set as fds 1-3, /dev/null as fd 0 and no other descriptor, and reports its exact exit code', async (t) => {
    await withSpawner(t, async (path) => {
      const spawner = new Spawner(path, null);
      try {
        // The shell lists its own descriptors by a glob: an `ls /proc/$$/fd | …` pipeline would
        // race with the shell, which holds the pipeline's pipes until it has forked every stage.
        const probe =
          'echo "sid=$(cut -d" " -f6 /proc/self/stat) pid=$$"; cd /proc/$$/fd && for f in *; do printf "%s " "$f"; done; echo; readlink /proc/$$/fd/0; echo err >&2; exit 3';
        const [a, b] = [await spawner.start(SPARE), await spawner.start(SPARE)];
        assert.notEqual(a.pid, b.pid);
        const [ra, rb] = await Promise.all([finish(a, `${probe}\n`), finish(b, `${probe}\n`)]);
        for (const [spare, r] of [
          [a, ra],
          [b, rb],
        ] as const) {
          const [first, fds, stdin] = r.stdout.trim().split('\n');
          assert.equal(first, `sid=${spare.pid} pid=${spare.pid}`, 'a session of its own');
          // 0-3 are the spare's own; a fifth is the directory the glob was read from
          const listed = (fds?.trim().split(' ') ?? []).map(Number).sort((x, y) => x - y);
          assert.deepEqual(listed.slice(0, 4), [0, 1, 2, 3]);
          assert.ok(listed.length <= 5, `descriptors: ${fds}`);
          assert.equal(stdin, '/dev/null');
          assert.equal(r.stderr, 'err\n', 'stderr apart from stdout');
          assert.deepEqual([r.code, r.signal], [3, null]);
        }
      } finally {
        spawner.close();
      }
    });
  });

  it('reports a spare killed by a signal as that signal, not as an exit code', async (t) => {
    await withSpawner(t, async (path) => {
      const spawner = new Spawner(path, null);
      try {
        const spare = await spawner.start(SPARE);
        const r = await finish(spare, 'kill -KILL $$\n');
        assert.deepEqual([r.code, r.signal], [null, 'SIGKILL']);
        const other = await spawner.start(SPARE);
        const exit137 = await finish(other, 'exit 137\n');
        assert.deepEqual([exit137.code, exit137.signal], [137, null]);
      } finally {
        spawner.close();
      }
    });
  });

  it('drops a spare to the jobs’ account, which can signal neither its waiter nor the spawner, so its exit is still reported', async (t) => {
    if (process.getuid?.() !== 0) {
      t.skip('changing accounts needs root');
      return;
    }
    await withSpawner(t, async (path) => {
      const spawner = new Spawner(path, { uid: 65534, gid: 65534 });
      try {
        const spare = await spawner.start(SPARE);
        const r = await finish(
          spare,
          'id -u; id -g; id -G; kill -KILL $PPID 2>/dev/null && echo waiter-killed || echo waiter-refused; exit 5\n',
        );
        assert.deepEqual(r.stdout.trim().split('\n'), ['65534', '65534', '65534', 'waiter-refused']);
        assert.deepEqual([r.code, r.signal], [5, null]);
        // the spawner still serves the next spare
        const next = await spawner.start(SPARE);
        assert.deepEqual((await finish(next, 'exit 0\n')).code, 0);
      } finally {
        spawner.close();
      }
    });
  });

  it('serves more spares than one spawner has sets for, by starting another', async (t) => {
    await withSpawner(t, async (path) => {
      const spawner = new Spawner(path, null);
      try {
        const codes: (number | null)[] = [];
        for (let i = 0; i < 40; i++)
          codes.push((await finish(await spawner.start(SPARE), `exit ${i % 7}\n`)).code);
        assert.deepEqual(
          codes,
          Array.from({ length: 40 }, (_, i) => i % 7),
        );
      } finally {
        spawner.close();
      }
    });
  });

  it('ends without starting anything on a request for a set it was not given, or a short request', async (t) => {
    await withSpawner(t, async (path) => {
      for (const request of [
        Buffer.from([0, 4, 0, 0, 255, 255, 255, 255, 255, 255, 255, 255]), // set 1024
        Buffer.from([0, 0, 0]),
      ]) {
        const child = spawn(path, ['/bin/sh', '-c', 'echo started'], {
          stdio: ['pipe', 'pipe', 'ignore', 'pipe', 'pipe', 'pipe'],
          env: {},
        });
        let reports = 0;
        child.stdout!.on('data', (b: Buffer) => (reports += b.length));
        child.stdin!.end(request);
        const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
        assert.equal(code, 0);
        assert.equal(reports, 0, 'nothing started, nothing reported');
      }
    });
  });
});
