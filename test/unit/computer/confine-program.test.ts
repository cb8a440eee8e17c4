import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  realpathSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { scopeProgram } from '../../../src/computer/backend/bwrap/scope-program.js';
import { withHostProgram } from '../../helpers/host-program.js';

/** An unprivileged account (root's capabilities would say nothing about Landlock). */
const ACCOUNT = process.getuid?.() === 0 ? { uid: 65534, gid: 65534 } : {};

/** Real paths of the programs the tests let run. */
const SH = realpathSync('/bin/sh');
const LOADER = realpathSync('/lib64/ld-linux-x86-64.so.2');
const TOUCH = realpathSync('/usr/bin/touch');
const MV = realpathSync('/usr/bin/mv');
const MKDIR = realpathSync('/usr/bin/mkdir');
const LN = realpathSync('/usr/bin/ln');
const RM = realpathSync('/usr/bin/rm');

/** A directory any account may write, removed afterwards. */
function withDirs(fn: (dirs: { inside: string; outside: string; base: string }) => void): void {
  const base = mkdtempSync(join(tmpdir(), 'paddock-confine-'));
  try {
    chmodSync(base, 0o755);
    const inside = join(base, 'inside');
    const outside = join(base, 'outside');
    for (const d of [inside, outside]) {
      mkdirSync(d);
      chmodSync(d, 0o777);
    }
    fn({ inside, outside, base });
  } finally {
    rmSync(base, { recursive: true, force: true });
  }
}

/** Runs `sh -c script` through the launcher with `tokens`, as the unprivileged account. */
function confined(launcher: string, tokens: string[], script: string, cwd: string) {
  return spawnSync(launcher, ['--confine', ...tokens, '--', SH, '-c', script], {
    encoding: 'utf8',
    cwd,
    env: { PATH: '/usr/bin:/bin' },
    ...ACCOUNT,
  });
}

describe('paddock-scope --confine, the shell built-in’s kernel rules', () => {
  it('lets the program execute only what an x token names, for itself and everything it starts', async (t) => {
    await withHostProgram(t, 'paddock-scope', scopeProgram(), (launcher) => {
      withDirs(({ inside }) => {
        const tokens = [`x${SH}`, `x${LOADER}`, `x${TOUCH}`, `w${inside}`];
        const r = confined(
          launcher,
          tokens,
          'touch a && echo touched; ls; echo ls=$?; sh -c "sh -c \\"touch b\\""; echo nested=$?',
          inside,
        );
        assert.match(r.stdout, /touched/);
        assert.match(r.stdout, /ls=126/);
        assert.match(r.stdout, /nested=0/);
        assert.match(r.stderr, /ls: Permission denied/);
        assert.ok(existsSync(join(inside, 'a')) && existsSync(join(inside, 'b')));
      });
    });
  });

  it('lets it write only beneath a w token: create, rename, link and remove inside; nothing outside', async (t) => {
    await withHostProgram(t, 'paddock-scope', scopeProgram(), (launcher) => {
      withDirs(({ inside, outside }) => {
        writeFileSync(join(outside, 'kept'), 'kept');
        chmodSync(join(outside, 'kept'), 0o666);
        const tokens = [`x${SH}`, `x${LOADER}`, `x${MV}`, `x${MKDIR}`, `x${LN}`, `x${RM}`, `w${inside}`];
        const script = [
          'echo one > f && mkdir d && mv f d/g && ln -s g d/l && rm d/l; echo inside=$?',
          `echo x > ${outside}/new; echo create=$?`,
          `echo x >> ${outside}/kept; echo append=$?`,
          `mkdir ${outside}/d; echo mkdir=$?`,
          `mv d/g ${outside}/g; echo move-out=$?`,
          `mv ${outside}/kept kept; echo move-in=$?`,
          `rm ${outside}/kept; echo remove=$?`,
        ].join('\n');
        const r = confined(launcher, tokens, script, inside);
        assert.deepEqual(r.stdout.trim().split('\n'), [
          'inside=0',
          'create=2',
          'append=2',
          'mkdir=1',
          'move-out=1',
          'move-in=1',
          'remove=1',
        ]);
        assert.ok(!existsSync(join(outside, 'new')) && !existsSync(join(outside, 'g')));
        assert.ok(existsSync(join(inside, 'd', 'g')) && existsSync(join(outside, 'kept')));
      });
    });
  });

  it('lets an f token write one file and /dev/null, and grants nothing through a path with a link', async (t) => {
    await withHostProgram(t, 'paddock-scope', scopeProgram(), (launcher) => {
      withDirs(({ inside, outside, base }) => {
        const file = join(outside, 'one');
        writeFileSync(file, '');
        chmodSync(file, 0o666);
        symlinkSync(outside, join(base, 'link'));
        const tokens = [`x${SH}`, `x${LOADER}`, `f${file}`, 'f/dev/null', `w${join(base, 'link')}`];
        const script = `echo x > ${file}; echo file=$?; echo x > /dev/null; echo null=$?; echo x > ${outside}/other; echo via-link=$?`;
        const r = confined(launcher, tokens, script, inside);
        assert.deepEqual(r.stdout.trim().split('\n'), ['file=0', 'null=0', 'via-link=2']);
      });
    });
  });

  it('skips a token whose path is missing, names a program it cannot start, and refuses malformed tokens', async (t) => {
    await withHostProgram(t, 'paddock-scope', scopeProgram(), (launcher) => {
      withDirs(({ inside }) => {
        const ok = confined(
          launcher,
          [`x${SH}`, `x${LOADER}`, 'x/no/such/file', 'w/no/such/dir'],
          'echo fine',
          inside,
        );
        assert.equal(ok.status, 0, ok.stderr);
        const run = (args: string[]) => spawnSync(launcher, args, { encoding: 'utf8', ...ACCOUNT });
        const notAllowed = run(['--confine', `x${LOADER}`, '--', SH, '-c', 'true']);
        assert.equal(notAllowed.status, 127);
        assert.match(notAllowed.stderr, new RegExp(`paddock-scope: ${SH} could not be started`));
        for (const args of [
          ['--confine', `q${SH}`, '--', SH],
          ['--confine', `x${SH}`],
          ['--confine', '--'],
        ]) {
          const bad = run(args);
          assert.equal(bad.status, 126, args.join(' '));
          assert.match(bad.stderr, /usage/);
        }
        // the first mode is unchanged
        const scope = run(['/bin/echo', 'scoped']);
        assert.equal(scope.stdout, 'scoped\n');
      });
    });
  });
});
