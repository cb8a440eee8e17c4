/**
 * The file tools against a reference model, in a real computer: seeded random trees of files,
 * directories and links of every kind (inside and outside the roots, dangling, loops, chains,
 * `..` in targets, `/var/tmp`, `/proc/self/root`, `/proc/<pid>/cwd`, `/dev/fd`), then thousands
 * of read_file, list_files, list_dir and write_file calls on random paths through them, each
 * decision and effect compared with the model (test/helpers/file-model.ts). Every file holds its
 * own canonical path, so a read shows exactly which file the kernel opened. A failure prints the
 * seed; `PADDOCK_PROPERTY_SEED=<seed>` replays it.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { isPaddockError } from '../../src/shared/errors.js';
import {
  dumpScript,
  type Expected,
  type ModelNode,
  type ModelRoots,
  type ModelTree,
  permitted,
  randomLayout,
  randomPath,
} from '../helpers/file-model.js';
import { random } from '../helpers/fuzz.js';
import { pollUntil } from '../helpers/poll.js';
import {
  type Call,
  launchRunning,
  runUntilExit,
  toolCaller,
  withComputer,
} from '../unit/computer/fixture.js';

const ROOTS: ModelRoots = {
  read: ['/workspace/in', '/workspace/ro', '/tmp/in'],
  write: ['/workspace/in', '/tmp/in'],
  deny: ['/workspace/in/d0'],
};
const AREAS = ['/workspace/in', '/workspace/ro', '/workspace/out', '/tmp/in', '/tmp/out'];
/** Entries of the computer's own system the layouts' links lead through (all outside the roots). */
const SYSTEM: Record<string, ModelNode> = {
  '/workspace': { kind: 'dir' },
  '/tmp': { kind: 'dir' },
  '/var': { kind: 'dir' },
  '/var/tmp': { kind: 'link', target: '../tmp' },
  '/proc': { kind: 'dir' },
  '/proc/self': { kind: 'link', target: '1' },
  '/proc/1': { kind: 'dir' },
  '/proc/1/cwd': { kind: 'link', target: '/' },
  '/proc/1/root': { kind: 'link', target: '/' },
  '/dev': { kind: 'dir' },
  '/dev/fd': { kind: 'link', target: '/proc/self/fd' },
  '/dev/null': { kind: 'other' },
  '/etc': { kind: 'dir' },
  '/etc/passwd': { kind: 'file', content: '(the computer passwd)' },
};
/** Where request paths start: mostly inside the roots, where links can lead anywhere. */
const STARTS = [
  '/workspace/in',
  '/workspace/in',
  '/workspace/in',
  '/tmp/in',
  '/tmp/in',
  '/workspace/ro',
  '/workspace/out',
  '/tmp/out',
];
const LAYOUTS = 6;
const CASES_PER_LAYOUT = 900;
const DUMP_EVERY_WRITES = 40;
const policy = { files: ROOTS };

type Op = 'read_file' | 'list_files' | 'list_dir' | 'write_file';
interface Case {
  op: Op;
  path: string;
  overwrite?: boolean;
  content?: string;
}

/** What the tool should answer, and the change to make to the model when it acts. */
function expect(
  tree: ModelTree,
  c: Case,
): { code: string; check?: (r: Record<string, unknown>) => void; apply?: () => void } {
  const kind = c.op === 'write_file' ? 'write' : 'read';
  if (!permitted(ROOTS, kind, c.path)) return { code: 'POLICY_DENIED' };
  const e: Expected = tree.resolve(ROOTS, kind, c.path, c.op === 'write_file');
  if (c.op === 'write_file') {
    if (e.code === 'ok') return { code: 'INVALID_ARGUMENT' }; // the path ends on a directory itself
    if (e.code !== 'create') return { code: e.code };
    if (!c.overwrite && (e.namedLink || e.existing)) return { code: 'FILE_EXISTS' };
    if (e.existing && e.existing.kind !== 'file') return { code: 'INVALID_ARGUMENT' };
    return {
      code: 'ok',
      check: (r) => assert.equal(r.created, e.existing === null, 'created'),
      apply: () => tree.set(e.path, { kind: 'file', content: c.content as string }),
    };
  }
  if (e.code !== 'ok') return { code: e.code };
  if (c.op === 'read_file') {
    if (e.node.kind !== 'file') return { code: 'INVALID_ARGUMENT' };
    const content = e.node.content;
    return { code: 'ok', check: (r) => assert.equal(r.content, content, `read ${c.path} -> ${e.path}`) };
  }
  if (e.node.kind !== 'dir') return { code: 'INVALID_ARGUMENT' };
  const names = tree.children(e.path);
  return {
    code: 'ok',
    check: (r) =>
      assert.deepEqual(
        (r.entries as { name: string }[]).map((x) => x.name),
        names,
        `list ${c.path} -> ${e.path}`,
      ),
  };
}

async function outcome(call: Call, c: Case): Promise<{ code: string; result?: Record<string, unknown> }> {
  const input: Record<string, unknown> = { path: c.path };
  if (c.op === 'write_file') Object.assign(input, { content: c.content, overwrite: c.overwrite });
  if (c.op === 'list_files' || c.op === 'list_dir') input.limit = 500;
  try {
    return { code: 'ok', result: await call(c.op, input) };
  } catch (e) {
    return { code: isPaddockError(e) ? e.code : `thrown: ${String(e)}` };
  }
}

async function dumpOf(manager: Parameters<typeof runUntilExit>[0]): Promise<string[]> {
  const r = await runUntilExit(manager, dumpScript(AREAS));
  assert.equal(r.exitCode, 0, String(r.stderr));
  return String(r.stdout)
    .split('\n')
    .filter((l) => l.length > 0)
    .sort();
}

describe('file tools against a reference model (differential property test)', { concurrency: false }, () => {
  it('decides and acts as the model on thousands of random requests through random link trees', async () => {
    const seed = Number(process.env.PADDOCK_PROPERTY_SEED ?? Math.floor(Math.random() * 2 ** 31));
    const rnd = random(seed);
    let cases = 0;
    let lastCase: Case | null = null;
    try {
      await withComputer({ policy }, async ({ manager, ctx }) => {
        const call = toolCaller(manager, ctx);
        await launchRunning(manager);
        const tally: Record<string, number> = {};
        for (let layout = 0; layout < LAYOUTS; layout++) {
          const { tree, script } = randomLayout(rnd, AREAS, SYSTEM);
          const built = await runUntilExit(manager, `rm -rf ${AREAS.join(' ')}\n${script}`);
          assert.equal(built.exitCode, 0, `layout script failed: ${built.stderr}`);
          assert.deepEqual(await dumpOf(manager), tree.dump(AREAS), 'the layout was built as modelled');
          let writes = 0;
          for (let i = 0; i < CASES_PER_LAYOUT; i++) {
            const op = (
              ['read_file', 'read_file', 'list_files', 'list_dir', 'write_file', 'write_file'] as const
            )[Math.floor(rnd() * 6)] as Op;
            const c: Case = { op, path: randomPath(rnd, tree, STARTS) };
            if (op === 'write_file')
              Object.assign(c, { overwrite: rnd() < 0.5, content: `w${seed}-${cases}` });
            lastCase = c;
            const want = expect(tree, c);
            const got = await outcome(call, c);
            assert.equal(
              got.code,
              want.code,
              `${op} ${c.path}${op === 'write_file' ? ` overwrite=${c.overwrite}` : ''}`,
            );
            if (got.result) want.check?.(got.result);
            want.apply?.();
            tally[`${op} ${got.code}`] = (tally[`${op} ${got.code}`] ?? 0) + 1;
            cases++;
            if (op === 'write_file' && got.code === 'ok' && ++writes % DUMP_EVERY_WRITES === 0) {
              assert.deepEqual(await dumpOf(manager), tree.dump(AREAS), 'the files are as the model says');
            }
          }
          assert.deepEqual(await dumpOf(manager), tree.dump(AREAS), 'the files are as the model says');
        }
        assert.ok(cases >= 5000, `${cases} cases`);
        for (const outcome of [
          'read_file ok',
          'read_file POLICY_DENIED',
          'write_file ok',
          'write_file POLICY_DENIED',
          'list_files ok',
          'list_files POLICY_DENIED',
        ]) {
          assert.ok(
            (tally[outcome] ?? 0) > 0,
            `the requests reached "${outcome}" (${JSON.stringify(tally)})`,
          );
        }
        process.stderr.write(`file-tools property: seed ${seed}, ${cases} cases: ${JSON.stringify(tally)}\n`);
      });
    } catch (e) {
      process.stderr.write(
        `file-tools property test failed with PADDOCK_PROPERTY_SEED=${seed} after ${cases} cases (last: ${JSON.stringify(lastCase)})\n`,
      );
      throw e;
    }
  });

  it('never reads, lists or writes outside the roots while jobs swap links and directories under the calls', async () => {
    const SWAPPER = `python3 - <<'PY'
import os
def quiet(f):
    try:
        f()
    except OSError:
        pass
for d in ('/workspace/in/real', '/workspace/out/target', '/tmp/out/target'):
    os.makedirs(d, exist_ok=True)
for d, text in (('/workspace/in/real', 'inside'), ('/workspace/out/target', 'OUTSIDE'), ('/tmp/out/target', 'OUTSIDE')):
    with open(d + '/f', 'w') as f:
        f.write(text)
open('/workspace/out/target/only-outside', 'w').close()
open('/tmp/out/s.txt', 'w').write('OUTSIDE')
open('/workspace/in/plain', 'w').write('inside')
print('swapping', flush=True)
while not os.path.exists('/workspace/in/stop'):
    for step in (lambda: os.rename('/workspace/in/real', '/workspace/in/sw'),
                 lambda: os.rename('/workspace/in/sw', '/workspace/in/real'),
                 lambda: os.symlink('/workspace/out/target', '/workspace/in/sw'),
                 lambda: os.unlink('/workspace/in/sw'),
                 lambda: os.symlink('/proc/self/root/tmp/out/target', '/workspace/in/sw'),
                 lambda: os.unlink('/workspace/in/sw'),
                 lambda: os.symlink('/var/tmp/out/s.txt', '/workspace/in/leaf'),
                 lambda: os.rename('/workspace/in/leaf', '/workspace/in/gone'),
                 lambda: os.link('/workspace/in/plain', '/workspace/in/leaf'),
                 lambda: os.unlink('/workspace/in/leaf'),
                 lambda: os.unlink('/workspace/in/gone')):
        quiet(step)
PY`;
    await withComputer({ policy }, async ({ manager, ctx }) => {
      const call = toolCaller(manager, ctx);
      await launchRunning(manager);
      await runUntilExit(manager, 'mkdir -p /workspace/in /workspace/out /tmp/in /tmp/out');
      const swapper = await manager.runCommand({ script: SWAPPER, waitMs: 200, timeoutMs: 600_000 });
      await pollUntil(
        () => manager.readJob(swapper.jobId, undefined, 4096).stdout.includes('swapping'),
        'the swapper to start',
        20_000,
      );
      const leaks: string[] = [];
      const done = { reads: 0, lists: 0, writes: 0 };
      for (
        let round = 0;
        round < 60 || ((done.writes === 0 || done.reads === 0 || done.lists === 0) && round < 3000);
        round++
      ) {
        await Promise.all(
          Array.from({ length: 6 }, async (_, i) => {
            const n = round * 6 + i;
            const r = await call('read_file', {
              path: i % 2 ? '/workspace/in/sw/f' : '/workspace/in/leaf',
            }).catch(() => null);
            if (r) {
              done.reads++;
              if (String(r.content) !== 'inside') leaks.push(`read ${String(r.content)}`);
            }
            const l = await call('list_files', { path: '/workspace/in/sw' }).catch(() => null);
            if (l) {
              done.lists++;
              const names = (l.entries as { name: string }[]).map((e) => e.name);
              if (names.includes('only-outside')) leaks.push('listed the outside directory');
            }
            const w = await call('write_file', {
              path: i % 2 ? `/workspace/in/sw/w${n}` : '/workspace/in/leaf',
              content: 'inside',
              overwrite: i % 3 !== 0,
            }).catch(() => null);
            if (w) done.writes++;
          }),
        );
      }
      await call('write_file', { path: '/workspace/in/stop', content: '', overwrite: true });
      const outside = await runUntilExit(
        manager,
        'find /workspace/out /tmp/out | sort; cat /tmp/out/s.txt /workspace/out/target/f /tmp/out/target/f',
      );
      assert.deepEqual(leaks, [], 'a call reached outside the roots');
      assert.deepEqual(
        String(outside.stdout).split('\n'),
        [
          '/tmp/out',
          '/tmp/out/s.txt',
          '/tmp/out/target',
          '/tmp/out/target/f',
          '/workspace/out',
          '/workspace/out/target',
          '/workspace/out/target/f',
          '/workspace/out/target/only-outside',
          'OUTSIDEOUTSIDEOUTSIDE',
        ],
        'nothing outside the roots was created or changed',
      );
      assert.ok(done.reads > 0 && done.writes > 0 && done.lists > 0, JSON.stringify(done));
    });
  });
});
