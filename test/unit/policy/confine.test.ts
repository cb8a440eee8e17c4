import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { buildAgentSandbox } from '../../../src/agents/policy-narrowing.js';
import { policySchema } from '../../../src/config/schema.js';
import { createWhitelistSandbox, intersectConfinements } from '../../../src/policy/index.js';
import { sandboxFor } from './helpers.js';

describe('what the kernel lets a program run by shell do (decision.confine)', () => {
  const policy = {
    files: { write: ['/workspace', '/tmp/out', '/srv/secret/drop'], deny: ['/srv/secret'] },
    exec: { allow: [{ name: 'git', helpers: ['/usr/lib/git-core'] }, { name: 'find' }] },
  };

  it('carries the rule’s helpers and the write roots that no deny root covers', () => {
    const sandbox = sandboxFor(policy);
    assert.deepEqual(sandbox.check({ type: 'exec', argv: ['git', 'status'] }).confine, {
      helpers: ['/usr/lib/git-core'],
      write: ['/workspace', '/tmp/out'],
    });
    assert.deepEqual(sandbox.check({ type: 'exec', argv: ['/usr/bin/find', '.'] }).confine, {
      helpers: [],
      write: ['/workspace', '/tmp/out'],
    });
    assert.equal(sandbox.check({ type: 'exec', argv: ['sh'] }).confine, undefined);
  });

  it('refuses a helper that is relative, unnormalised, / or inside a writable place', () => {
    for (const [helper, problem] of [
      ['usr/lib/git-core', /absolute/],
      ['/usr/lib/../bin', /absolute/],
      ['/', /absolute/],
      ['/workspace/bin', /files\.write/],
      ['/tmp/x', /anyone/],
    ] as const) {
      assert.throws(
        () =>
          sandboxFor({
            files: { write: ['/workspace'] },
            exec: { allow: [{ name: 'git', helpers: [helper] }] },
          }),
        (e: { code: string; message: string; details: { rule: string } }) =>
          e.code === 'INVALID_ARGUMENT' &&
          e.details.rule === `exec.allow[0].helpers[0]=${helper}` &&
          problem.test(e.message),
        helper,
      );
    }
  });

  it('an agent’s narrower policy narrows the confinement too: only what both allow', async () => {
    const globalConfig = policySchema.parse(policy);
    const global = createWhitelistSandbox(globalConfig);
    const { sandbox } = buildAgentSandbox(global, globalConfig, {
      files: { write: ['/workspace/out'] },
      exec: { allow: [{ name: 'git', denyArgs: [] }] },
    });
    const decision = await sandbox.enforce({ type: 'exec', argv: ['git', 'log'] });
    assert.deepEqual(decision.confine, { helpers: [], write: ['/workspace/out'] });
    assert.deepEqual(sandbox.check({ type: 'exec', argv: ['git', 'log'] }).confine, decision.confine);
  });

  it('intersects roots by containment, and a side without a confinement allows nothing more', () => {
    assert.deepEqual(
      intersectConfinements(
        { helpers: ['/usr/lib/git-core'], write: ['/workspace', '/tmp'] },
        {
          helpers: ['/usr/lib/git-core/git-remote-http', '/usr/bin/x'],
          write: ['/workspace/a', '/tmp', '/var'],
        },
      ),
      { helpers: ['/usr/lib/git-core/git-remote-http'], write: ['/workspace/a', '/tmp'] },
    );
    assert.deepEqual(intersectConfinements({ helpers: ['/a'], write: ['/b'] }, undefined), {
      helpers: [],
      write: [],
    });
    assert.deepEqual(
      intersectConfinements({ helpers: [], write: ['/'] }, { helpers: [], write: ['/w'] }).write,
      ['/w'],
    );
  });
});
