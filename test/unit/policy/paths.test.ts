import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { MAX_PATH_CHARS, parseGuestPath } from '../../../src/policy/index.js';
import { sandboxFor } from './helpers.js';

const sandbox = sandboxFor({
  files: { read: ['/ws', '/data/shared/'], write: ['/ws'], deny: ['/ws/.git', '/ws/secrets'] },
});

function read(path: string) {
  return sandbox.check({ type: 'file.read', path });
}
function write(path: string) {
  return sandbox.check({ type: 'file.write', path });
}

describe('path rules (lexical)', () => {
  it('allows a root itself and paths below it, naming the rule', () => {
    assert.equal(read('/ws').allow, true);
    assert.equal(read('/ws').rule, 'files.read[0]=/ws');
    assert.equal(read('/ws/src/index.ts').allow, true);
    assert.equal(write('/ws/new.txt').rule, 'files.write[0]=/ws');
    assert.equal(read('/data/shared/x').rule, 'files.read[1]=/data/shared/');
  });

  it('matches roots on a separator boundary: /ws does not allow /ws-evil or /wsx', () => {
    for (const path of ['/ws-evil', '/ws-evil/x', '/wsx', '/w', '/']) {
      const decision = read(path);
      assert.equal(decision.allow, false, path);
      assert.equal(decision.rule, 'default-deny', path);
    }
  });

  it('refuses "." and ".." segments instead of normalising them', () => {
    for (const path of ['/ws/../etc/passwd', '/ws/..', '/ws/./x', '/ws/.', '/./ws', '/ws/a/../../etc']) {
      const decision = read(path);
      assert.equal(decision.allow, false, path);
      assert.equal(decision.rule, 'path-syntax', path);
      assert.match(decision.reason, /"\." or "\.\."/);
    }
  });

  it('accepts names that merely start with dots', () => {
    assert.equal(read('/ws/.env.example').allow, true);
    assert.equal(read('/ws/...').allow, true);
    assert.equal(read('/ws/..hidden').allow, true);
  });

  it('refuses a NUL byte anywhere in the path', () => {
    const decision = read('/ws/a\0/../../etc/passwd');
    assert.equal(decision.allow, false);
    assert.equal(decision.rule, 'path-syntax');
    assert.match(decision.reason, /NUL/);
    assert.equal(read('/ws/file\0').allow, false);
  });

  it('refuses backslashes', () => {
    const decision = read('/ws/..\\..\\etc');
    assert.equal(decision.rule, 'path-syntax');
    assert.match(decision.reason, /backslash/);
  });

  it('refuses empty segments (//), including a doubled trailing slash', () => {
    for (const path of ['/ws//x', '//ws', '//', '/ws//']) {
      const decision = read(path);
      assert.equal(decision.rule, 'path-syntax', path);
      assert.match(decision.reason, /empty segment/, path);
    }
  });

  it('treats one trailing slash as the directory itself', () => {
    assert.equal(read('/ws/').allow, true);
    assert.equal(read('/ws/src/').allow, true);
    assert.equal(read('/ws-evil/').allow, false);
    assert.deepEqual(parseGuestPath('/ws/src/'), { ok: true, path: '/ws/src' });
    assert.deepEqual(parseGuestPath('/'), { ok: true, path: '/' });
  });

  it('refuses relative, empty, non-string and overlong paths', () => {
    for (const path of ['ws/x', 'x', './ws', '~/x', '']) assert.equal(read(path).rule, 'path-syntax', path);
    assert.equal(sandbox.check({ type: 'file.read', path: 42 as unknown as string }).rule, 'path-syntax');
    const long = `/ws/${'a'.repeat(MAX_PATH_CHARS)}`;
    assert.match(read(long).reason, /longer than/);
  });

  it('checks deny roots before allow roots, for reads and writes', () => {
    for (const decision of [read('/ws/.git'), read('/ws/.git/config'), write('/ws/.git/hooks/pre-commit')]) {
      assert.equal(decision.allow, false);
      assert.equal(decision.rule, 'files.deny[0]=/ws/.git');
    }
    assert.equal(write('/ws/secrets/key').rule, 'files.deny[1]=/ws/secrets');
    assert.equal(read('/ws/.github/workflows').allow, true, 'the deny root has a separator boundary too');
  });

  it('keeps read and write lists apart', () => {
    assert.equal(read('/data/shared/a').allow, true);
    const decision = write('/data/shared/a');
    assert.equal(decision.allow, false);
    assert.equal(decision.rule, 'default-deny');
    assert.match(decision.reason, /files\.write/);
  });

  it('denies everything when no root is configured, and allows all with the root "/"', () => {
    const none = sandboxFor({ files: { read: [], write: [], deny: [] } });
    assert.equal(none.check({ type: 'file.read', path: '/ws/x' }).rule, 'default-deny');
    const all = sandboxFor({ files: { read: ['/'], write: [], deny: ['/etc'] } });
    assert.equal(all.check({ type: 'file.read', path: '/usr/lib/x' }).rule, 'files.read[0]=/');
    assert.equal(all.check({ type: 'file.read', path: '/' }).allow, true);
    assert.equal(all.check({ type: 'file.read', path: '/etc/passwd' }).rule, 'files.deny[0]=/etc');
  });

  it('enforce throws POLICY_DENIED naming the rule and saying what to do next', async () => {
    await assert.rejects(sandbox.enforce({ type: 'file.write', path: '/ws/.git/config' }), (e: unknown) => {
      const err = e as { code: string; message: string; details: Record<string, unknown> };
      assert.equal(err.code, 'POLICY_DENIED');
      assert.equal(err.details.rule, 'files.deny[0]=/ws/.git');
      assert.match(err.message, /files\.deny\[0\]=\/ws\/\.git/);
      assert.match(err.message, /ask the operator/);
      return true;
    });
    const ok = await sandbox.enforce({ type: 'file.write', path: '/ws/a.txt' });
    assert.equal(ok.rule, 'files.write[0]=/ws');
  });
});
