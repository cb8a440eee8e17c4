import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { PADDOCK_BIN, REPO_ROOT } from '../helpers/paddock-process.js';

const SETUP = join(REPO_ROOT, 'scripts', 'setup.mjs');

/**
 * Runs `argv` as an ordinary user (uid 1000 in a user namespace) on a view of this machine whose
 * /usr/bin lacks `hidden`: a directory of links to every other /usr/bin entry is mounted over it.
 */
function runWithout(hidden: string[], argv: string[], fakeBin: string) {
  for (const name of readdirSync('/usr/bin')) {
    if (!hidden.includes(name)) symlinkSync(join('/run/orig-bin', name), join(fakeBin, name));
  }
  const r = spawnSync(
    '/usr/bin/bwrap',
    [
      ...['--ro-bind', '/', '/', '--dev', '/dev', '--proc', '/proc', '--tmpfs', '/run'],
      ...['--ro-bind', '/usr/bin', '/run/orig-bin', '--ro-bind', fakeBin, '/usr/bin'],
      ...['--unshare-user', '--uid', '1000', '--gid', '1000', '--die-with-parent', '--chdir', tmpdir()],
      ...argv,
    ],
    { encoding: 'utf8', env: { PATH: '/usr/bin:/bin', HOME: tmpdir(), PADDOCK_DATA: join(fakeBin, 'data') } },
  );
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

describe('set-up on a machine that lacks system packages', () => {
  let dir: string;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'paddock-setup-'));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('the pre-step of npm test names each missing Debian package with the command that installs it, and stops before npm or the build', () => {
    const bin = mkdtempSync(join(dir, 'bin-'));
    const r = runWithout(['bwrap', 'jq'], ['/usr/bin/node', SETUP, 'test'], bin);
    assert.equal(r.code, 1, r.stderr);
    assert.match(r.stderr, /bubblewrap\s+provides \/usr\/bin\/bwrap/);
    assert.match(r.stderr, /jq\s+provides \/usr\/bin\/jq/);
    assert.match(r.stderr, /apt-get update && apt-get install -y --no-install-recommends bubblewrap jq/);
    assert.doesNotMatch(r.stderr, /running|npm dependencies|rebuilding/);
  });

  it('the pre-step of npm start asks only for what serving needs', () => {
    const bin = mkdtempSync(join(dir, 'bin-'));
    const r = runWithout(['jq', 'chromium'], ['/usr/bin/node', SETUP, 'serve'], bin);
    assert.doesNotMatch(r.stderr, /missing system packages/);
  });

  it('paddock doctor fails on a missing bubblewrap with the same fix, and with --dev only warns about a package the tests need', () => {
    const bin = mkdtempSync(join(dir, 'bin-'));
    const r = runWithout(['bwrap', 'jq'], ['/usr/bin/node', PADDOCK_BIN, 'doctor'], bin);
    assert.equal(r.code, 1, r.stdout + r.stderr);
    assert.match(r.stdout, /FAIL\s+bubblewrap\s+\/usr\/bin\/bwrap is missing/);
    assert.match(
      r.stdout,
      /fix: su -c 'apt-get update && apt-get install -y --no-install-recommends bubblewrap'/,
    );
    // an ordinary user cannot mount a disk per computer: the workspace is not limited, and said so
    assert.match(r.stdout, /warn\s+disk quota\s+not enforced on \/workspace: Paddock does not run as root/);
    // a user is not told about what only Paddock's own tests need
    assert.doesNotMatch(r.stdout, /\bjq\b/);
    const dev = runWithout(
      ['bwrap', 'jq'],
      ['/usr/bin/node', PADDOCK_BIN, 'doctor', '--dev'],
      mkdtempSync(join(dir, 'bin-')),
    );
    assert.match(dev.stdout, /warn\s+jq\s+\/usr\/bin\/jq is missing; needed for .* \(npm test\)/);
  });
});
