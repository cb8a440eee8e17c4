/**
 * The staged runtime files (node-pty and its native package, the guest agent, node) must be
 * reachable by the sandbox's uids when Paddock itself lives where they cannot look, such as a
 * checkout under /root; and by nobody else. A nested name (`packages/@scope/pkg`) once left its
 * middle directories to root alone, so bwrap could not bind node-pty from a checkout under /root.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { chownSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { RuntimeStage, reachableByAnyone } from '../../../src/computer/backend/bwrap/runtime-files.js';

const isRoot = process.getuid?.() === 0;
const AGENT = 64_000;
const JOBS = 64_001;
const NOBODY = 65_534;

function readAs(uid: number, path: string): boolean {
  const r = spawnSync(
    '/usr/bin/setpriv',
    [`--reuid=${uid}`, `--regid=${uid}`, '--clear-groups', '--', '/bin/cat', path],
    {
      encoding: 'utf8',
    },
  );
  return r.status === 0;
}

describe('staged runtime files (Paddock as root)', {
  skip: isRoot ? false : 'only a server running as root stages files for the sandbox uids',
}, () => {
  it('a package staged under a nested name is readable by the runtime directory’s owner and by no other account', (t) => {
    const top = mkdtempSync(join(tmpdir(), 'paddock-stage-test-')); // 0700: nobody else reaches it
    t.after(() => rmSync(top, { recursive: true, force: true }));
    const source = join(top, 'checkout', 'node_modules', '@scope', 'pkg');
    mkdirSync(join(source, 'lib'), { recursive: true });
    writeFileSync(join(source, 'lib', 'index.js'), 'module.exports = 1;\n', { mode: 0o644 });
    const runtime = join(top, 'runtime');
    mkdirSync(runtime, { mode: 0o700 });
    chownSync(runtime, AGENT, AGENT);
    assert.equal(reachableByAnyone(source), false);

    const stage = new RuntimeStage(() => runtime, JOBS);
    const staged = stage.path(source, 'packages/@scope/pkg');
    assert.equal(staged, join(runtime, 'packages', '@scope', 'pkg'));
    assert.equal(stage.path(source, 'packages/@scope/pkg'), staged, 'staged once');
    // the top directory is root's 0700; open it for traversal only, as a server's data directory is
    spawnSync('chmod', ['0711', top]);
    assert.equal(readAs(AGENT, join(staged, 'lib', 'index.js')), true, 'the sandbox’s agent uid binds it');
    assert.equal(readAs(NOBODY, join(staged, 'lib', 'index.js')), false, 'another account reads nothing');
  });
});
