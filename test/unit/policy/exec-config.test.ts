import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { policySchema } from '../../../src/config/schema.js';
import { gitSubcommand } from '../../../src/policy/exec-config.js';
import { createWhitelistSandbox } from '../../../src/policy/index.js';

function launchOf(allow: unknown[], argv: string[]) {
  const sandbox = createWhitelistSandbox(policySchema.parse({ exec: { allow } }));
  const decision = sandbox.check({ type: 'exec', argv });
  assert.equal(decision.allow, true, decision.reason);
  return decision.launch!;
}

describe('exec launch additions (pinned configuration)', () => {
  it('pins git: no global or system config, hooks, fsmonitor and pager off, the subcommand pinned as an empty alias', () => {
    const launch = launchOf([{ name: 'git' }], ['git', '-C', '/workspace/r', 'st', '--short']);
    assert.equal(launch.env.GIT_CONFIG_GLOBAL, '/dev/null');
    assert.equal(launch.env.GIT_CONFIG_NOSYSTEM, '1');
    const pairs = Array.from({ length: Number(launch.env.GIT_CONFIG_COUNT) }, (_, i) => [
      launch.env[`GIT_CONFIG_KEY_${i}`],
      launch.env[`GIT_CONFIG_VALUE_${i}`],
    ]);
    assert.deepEqual(
      pairs.filter(([k]) => ['core.hooksPath', 'core.fsmonitor', 'alias.st'].includes(k!)),
      [
        ['core.hooksPath', '/dev/null'],
        ['core.fsmonitor', 'false'],
        ['alias.st', ''],
      ],
    );
    assert.deepEqual(launch.args, ['--no-pager']);
  });

  it('adds nothing for git whose rule trusts its config, and a rule’s own env and args for any executable', () => {
    assert.deepEqual(launchOf([{ name: 'git', trustConfig: true }], ['git', 'status']), {
      env: {},
      args: [],
    });
    assert.deepEqual(
      launchOf([{ name: 'rg', env: { RIPGREP_CONFIG_PATH: '' }, args: ['--no-config'] }], ['rg', 'x']),
      {
        env: { RIPGREP_CONFIG_PATH: '' },
        args: ['--no-config'],
      },
    );
  });

  it('finds the git subcommand past global options and their values', () => {
    assert.equal(gitSubcommand(['git', '-C', 'dir', '--git-dir', 'x', '--bare', 'log', '-1']), 'log');
    assert.equal(gitSubcommand(['git', '--version']), null);
  });
});
