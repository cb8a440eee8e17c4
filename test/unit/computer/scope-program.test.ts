import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { scopeProgram } from '../../../src/computer/backend/bwrap/scope-program.js';
import { withHostProgram } from '../../helpers/host-program.js';

/** Runs `fn` with the program written to a temporary file (skipped where there is none). */
function withLauncher(
  t: { skip(reason: string): void },
  fn: (path: string) => void | Promise<void>,
): Promise<void> {
  return withHostProgram(t, 'paddock-scope', scopeProgram(), fn);
}

describe('paddock-scope, the jobs’ Landlock launcher', () => {
  it('is a static x86-64 executable of a few hundred bytes, and none elsewhere', () => {
    const program = scopeProgram('x64')!;
    assert.equal(program.subarray(0, 4).toString('latin1'), '\x7fELF');
    assert.equal(program.readUInt16LE(18), 0x3e);
    assert.ok(program.length < 4096, `${program.length} bytes`);
    assert.equal(scopeProgram('arm64'), null);
  });

  it('runs the program with its arguments and environment in a domain that keeps it out of the processes outside', async (t) => {
    await withLauncher(t, async (path) => {
      // an unprivileged account (root's CAP_SYS_PTRACE would say nothing): a process outside the
      // domain, then the same read without and with the launcher
      const account = process.getuid?.() === 0 ? { uid: 65534, gid: 65534 } : {};
      const outside = spawn('sleep', ['30'], {
        env: { OUTSIDE_MARK: 'x', PATH: '/usr/bin:/bin' },
        ...account,
      });
      try {
        const probe = `cat /proc/${outside.pid}/environ >/dev/null 2>&1 && echo outside-readable || echo outside-denied`;
        const plain = spawnSync('/bin/sh', ['-c', probe], { encoding: 'utf8', ...account });
        assert.equal(plain.stdout.trim(), 'outside-readable', 'the probe can succeed without the launcher');
        const cwd = mkdtempSync(join(tmpdir(), 'paddock-scope-cwd-'));
        chmodSync(cwd, 0o777);
        // a child between fork and exec shows an empty environ for a moment: read until it shows
        const r = spawnSync(
          path,
          [
            '/bin/sh',
            '-c',
            `echo "$0 $1 $SCOPE_MARK"; ${probe}; sleep 5 & for i in $(seq 200); do n=$(tr "\\0" "\\n" < /proc/$!/environ | grep -c SCOPE_MARK); [ "$n" = 1 ] && break; done; echo "$n"; kill $!; mkdir d1 d2; touch d1/f; mv d1/f d2/f && echo moved`,
            'zero',
            'one',
          ],
          { encoding: 'utf8', env: { SCOPE_MARK: 'marked', PATH: '/usr/bin:/bin' }, cwd, ...account },
        );
        rmSync(cwd, { recursive: true, force: true });
        assert.equal(r.status, 0, r.stderr);
        assert.deepEqual(r.stdout.trim().split('\n'), ['zero one marked', 'outside-denied', '1', 'moved']);
      } finally {
        outside.kill('SIGKILL');
      }
    });
  });

  it('exits 0 when asked only to check, and 127 with a message for a program that cannot start', async (t) => {
    await withLauncher(t, (path) => {
      assert.equal(spawnSync(path, []).status, 0);
      const r = spawnSync(path, ['/no/such/program'], { encoding: 'utf8' });
      assert.equal(r.status, 127);
      assert.match(r.stderr, /could not be started/);
    });
  });
});
