import assert from 'node:assert/strict';
import { mkdir, readFile, stat, symlink, writeFile } from 'node:fs/promises';
import { describe, it } from 'node:test';
import { policySchema } from '../../../src/config/schema.js';
import { createWhitelistSandbox, type PolicyAction } from '../../../src/policy/index.js';
import { fsResolver, sandboxFor, withTempDir } from './helpers.js';

/** A workspace root and an outside directory in one temp dir; the policy allows only `ws`. */
async function layout(dir: string) {
  const ws = `${dir}/ws`;
  const outside = `${dir}/outside`;
  await mkdir(`${ws}/real/sub`, { recursive: true });
  await mkdir(`${ws}/.git`, { recursive: true });
  await mkdir(outside, { recursive: true });
  await writeFile(`${ws}/real/file.txt`, 'inside');
  await writeFile(`${outside}/secret.txt`, 'outside');
  await writeFile(`${ws}/.git/config`, '[core]');
  const sandbox = sandboxFor({
    files: { read: [ws], write: [ws], deny: [`${ws}/.git`] },
    exec: { allow: [{ name: 'ls' }] },
  });
  return { ws, outside, sandbox };
}

async function denial(promise: Promise<unknown>): Promise<{ rule: string; reason: string }> {
  try {
    await promise;
  } catch (e) {
    const err = e as { code?: string; details?: { rule: string; reason: string } };
    assert.equal(err.code, 'POLICY_DENIED');
    return err.details!;
  }
  assert.fail('expected POLICY_DENIED');
}

describe('symlink re-checks through a PathResolver', () => {
  it('allows an existing file inside the root and reports its canonical path', () =>
    withTempDir(async (dir) => {
      const { ws, sandbox } = await layout(dir);
      const decision = await sandbox.enforce(
        { type: 'file.read', path: `${ws}/real/file.txt` },
        { paths: fsResolver() },
      );
      assert.equal(decision.rule, `files.read[0]=${ws}`);
      assert.equal(decision.resolved, `${ws}/real/file.txt`);
    }));

  it('denies reading a symlink inside the workspace that points outside it', () =>
    withTempDir(async (dir) => {
      const { ws, outside, sandbox } = await layout(dir);
      await symlink(`${outside}/secret.txt`, `${ws}/escape`);
      const action: PolicyAction = { type: 'file.read', path: `${ws}/escape` };
      assert.equal(sandbox.check(action).allow, true, 'lexically the link is inside the root');
      const details = await denial(sandbox.enforce(action, { paths: fsResolver() }));
      assert.equal(details.rule, 'default-deny');
      assert.match(details.reason, /resolves to ".*outside\/secret\.txt"/);
    }));

  it('denies a write through a symlinked parent directory that points outside the workspace', () =>
    withTempDir(async (dir) => {
      const { ws, outside, sandbox } = await layout(dir);
      await symlink(outside, `${ws}/linkdir`);
      for (const path of [
        `${ws}/linkdir/secret.txt`,
        `${ws}/linkdir/new.txt`,
        `${ws}/linkdir/newdir/deeper.txt`,
      ]) {
        const details = await denial(sandbox.enforce({ type: 'file.write', path }, { paths: fsResolver() }));
        assert.equal(details.rule, 'default-deny', path);
        assert.match(details.reason, new RegExp(`resolves to "${outside}/`), path);
      }
    }));

  it('allows a new file under a symlinked parent that stays inside, and re-checks the real location', () =>
    withTempDir(async (dir) => {
      const { ws, sandbox } = await layout(dir);
      await symlink('real', `${ws}/alias`);
      const decision = await sandbox.enforce(
        { type: 'file.write', path: `${ws}/alias/sub/new.txt` },
        { paths: fsResolver() },
      );
      assert.equal(decision.allow, true);
      assert.equal(decision.resolved, `${ws}/real/sub/new.txt`);
    }));

  it('denies a write through a dangling symlink whose target is outside the workspace', () =>
    withTempDir(async (dir) => {
      const { ws, outside, sandbox } = await layout(dir);
      await symlink(`${outside}/planted.txt`, `${ws}/dangling`);
      const details = await denial(
        sandbox.enforce({ type: 'file.write', path: `${ws}/dangling` }, { paths: fsResolver() }),
      );
      assert.equal(details.rule, 'default-deny');
      assert.match(details.reason, new RegExp(`resolves to "${outside}/planted\\.txt"`));
      // The threat is real: a plain write through the link creates the file outside.
      await writeFile(`${ws}/dangling`, 'x');
      assert.equal(await readFile(`${outside}/planted.txt`, 'utf8'), 'x');
    }));

  it('follows relative and chained dangling links, including ones that climb out with ".."', () =>
    withTempDir(async (dir) => {
      const { ws, sandbox } = await layout(dir);
      await symlink('../outside/up.txt', `${ws}/up`);
      await symlink('hop2', `${ws}/hop1`);
      await symlink('real/../../outside/chained.txt', `${ws}/hop2`);
      for (const name of ['up', 'hop1']) {
        const details = await denial(
          sandbox.enforce({ type: 'file.write', path: `${ws}/${name}` }, { paths: fsResolver() }),
        );
        assert.equal(details.rule, 'default-deny', name);
      }
    }));

  it('allows a dangling symlink whose target is inside the workspace, reporting the target', () =>
    withTempDir(async (dir) => {
      const { ws, sandbox } = await layout(dir);
      await symlink('real/created-later.txt', `${ws}/pending`);
      const decision = await sandbox.enforce(
        { type: 'file.write', path: `${ws}/pending` },
        { paths: fsResolver() },
      );
      assert.equal(decision.resolved, `${ws}/real/created-later.txt`);
    }));

  it('denies a path below a dangling directory link that points outside (mkdir -p style)', () =>
    withTempDir(async (dir) => {
      const { ws, outside, sandbox } = await layout(dir);
      await symlink(`${outside}/not-yet`, `${ws}/dirlink`);
      const details = await denial(
        sandbox.enforce({ type: 'file.write', path: `${ws}/dirlink/a/b.txt` }, { paths: fsResolver() }),
      );
      assert.match(details.reason, new RegExp(`resolves to "${outside}/not-yet/a/b\\.txt"`));
    }));

  it('denies a symlink loop with a resolution error instead of hanging', () =>
    withTempDir(async (dir) => {
      const { ws, sandbox } = await layout(dir);
      await symlink('loop-b', `${ws}/loop-a`);
      await symlink('loop-a', `${ws}/loop-b`);
      const details = await denial(
        sandbox.enforce({ type: 'file.write', path: `${ws}/loop-a` }, { paths: fsResolver() }),
      );
      assert.equal(details.rule, 'path-resolution');
      assert.match(details.reason, /too many levels/);
    }));

  it('applies deny roots to the resolved path (a link into .git is refused)', () =>
    withTempDir(async (dir) => {
      const { ws, sandbox } = await layout(dir);
      await symlink('.git/config', `${ws}/innocent`);
      const details = await denial(
        sandbox.enforce({ type: 'file.write', path: `${ws}/innocent` }, { paths: fsResolver() }),
      );
      assert.equal(details.rule, `files.deny[0]=${ws}/.git`);
    }));

  it('denies a path outside the root even when it resolves inside', () =>
    withTempDir(async (dir) => {
      const { ws, outside, sandbox } = await layout(dir);
      await symlink(`${ws}/real/file.txt`, `${outside}/into-ws`);
      const details = await denial(
        sandbox.enforce({ type: 'file.read', path: `${outside}/into-ws` }, { paths: fsResolver() }),
      );
      assert.equal(details.rule, 'default-deny');
    }));

  it('fails closed for a missing target when the resolver cannot read links', () =>
    withTempDir(async (dir) => {
      const { ws, sandbox } = await layout(dir);
      const paths = fsResolver({ readlink: false });
      const details = await denial(
        sandbox.enforce({ type: 'file.write', path: `${ws}/real/new.txt` }, { paths }),
      );
      assert.equal(details.rule, 'path-resolution');
      assert.match(details.reason, /dangling symlink/);
      const existing = await sandbox.enforce({ type: 'file.read', path: `${ws}/real/file.txt` }, { paths });
      assert.equal(existing.allow, true);
    }));

  it('resolves a new file in an existing directory with few resolver calls', () =>
    withTempDir(async (dir) => {
      const { ws, sandbox } = await layout(dir);
      const paths = fsResolver();
      const decision = await sandbox.enforce({ type: 'file.write', path: `${ws}/real/new.txt` }, { paths });
      assert.equal(decision.resolved, `${ws}/real/new.txt`);
      assert.deepEqual(paths.calls, [
        `realpath ${ws}/real/new.txt`,
        `realpath ${ws}/real`,
        `readlink ${ws}/real/new.txt`,
      ]);
      await assert.rejects(stat(`${ws}/real/new.txt`), 'the check creates nothing');
    }));

  it('re-checks an exec working directory through the resolver', () =>
    withTempDir(async (dir) => {
      const { ws, outside, sandbox } = await layout(dir);
      await symlink(outside, `${ws}/out`);
      const ok = await sandbox.enforce(
        { type: 'exec', argv: ['ls'], cwd: `${ws}/real` },
        { paths: fsResolver() },
      );
      assert.equal(ok.rule, 'exec.allow[0]=ls');
      const details = await denial(
        sandbox.enforce({ type: 'exec', argv: ['ls'], cwd: `${ws}/out` }, { paths: fsResolver() }),
      );
      assert.match(details.reason, /^working directory: /);
    }));

  it('uses the resolver given at construction when a call passes none', () =>
    withTempDir(async (dir) => {
      const { ws, outside } = await layout(dir);
      await symlink(`${outside}/secret.txt`, `${ws}/escape`);
      const sandbox = createWhitelistSandbox(policySchema.parse({ files: { read: [ws], write: [ws] } }), {
        paths: fsResolver(),
      });
      await denial(sandbox.enforce({ type: 'file.read', path: `${ws}/escape` }));
    }));
});
