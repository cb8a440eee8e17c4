import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { ExecResolver } from '../../../src/policy/index.js';
import { fsWhich, sandboxFor } from './helpers.js';

const sandbox = sandboxFor({
  files: { read: ['/workspace'], write: ['/workspace'], deny: [] },
  exec: {
    allow: [
      { name: 'git', denyArgs: ['--upload-pack', '-c', '--config-env*'] },
      { name: 'python3', denyArgs: ['-c'] },
      { name: '/opt/tools/bin/lint' },
      { name: 'find', denyArgs: ['-exec', '-delete', '-fprint*'] },
      { name: 'curl' },
      { name: 'ls' },
      { name: 'node', denyArgs: ['--require=*', '-r'] },
    ],
    deny: ['curl', '/usr/bin/wget'],
    path: ['/usr/local/bin', '/usr/bin', '/bin'],
  },
});

function exec(argv: string[], cwd?: string) {
  return sandbox.check(cwd === undefined ? { type: 'exec', argv } : { type: 'exec', argv, cwd });
}

describe('exec rules (lexical)', () => {
  it('allows an executable by its bare name, naming the rule', () => {
    const decision = exec(['git', 'status']);
    assert.equal(decision.allow, true);
    assert.equal(decision.rule, 'exec.allow[0]=git');
  });

  it('allows an absolute path that is <exec.path dir>/<allowed name>, or an allowed absolute path', () => {
    assert.equal(exec(['/usr/bin/git', 'log']).rule, 'exec.allow[0]=git');
    assert.equal(exec(['/usr/local/bin/git']).allow, true);
    assert.equal(exec(['/opt/tools/bin/lint', '.']).rule, 'exec.allow[2]=/opt/tools/bin/lint');
    assert.equal(exec(['/usr/bin/git']).resolved, '/usr/bin/git');
  });

  it('denies an allowed name at an absolute path outside exec.path', () => {
    for (const argv0 of ['/workspace/git', '/tmp/git', '/opt/evil/git', '/usr/bin/sub/git']) {
      const decision = exec([argv0]);
      assert.equal(decision.allow, false, argv0);
      assert.equal(decision.rule, 'default-deny', argv0);
    }
  });

  it('denies a bare name for which only an absolute rule exists', () => {
    assert.equal(exec(['lint']).rule, 'default-deny');
  });

  it('denies relative paths to executables', () => {
    for (const argv0 of ['./git', 'bin/git', '../usr/bin/git', 'usr/bin/git']) {
      const decision = exec([argv0]);
      assert.equal(decision.rule, 'exec-syntax', argv0);
      assert.match(decision.reason, /relative path/, argv0);
    }
  });

  it('denies unnormalised absolute paths and names that are not names', () => {
    for (const argv0 of ['/usr/bin/../bin/git', '/usr//bin/git', '/usr/bin/git/', '.', '..', '/']) {
      assert.equal(exec([argv0]).rule, 'exec-syntax', argv0);
    }
  });

  it('denies an unknown executable by default', () => {
    const decision = exec(['bash', '-c', 'id']);
    assert.equal(decision.rule, 'default-deny');
    assert.match(decision.reason, /"bash" is not an allowed executable/);
  });

  it('denies a refused argument, naming the argument rule', () => {
    const decision = exec(['git', 'clone', '--upload-pack', 'touch /tmp/pwned', 'repo']);
    assert.equal(decision.allow, false);
    assert.equal(decision.rule, 'exec.allow[0].denyArgs[0]=--upload-pack');
    assert.match(decision.reason, /argument 2 "--upload-pack"/);
  });

  it('refuses the --opt=value form and unambiguous abbreviations of a refused long option', () => {
    for (const arg of ['--upload-pack=touch x', '--upload-pa=x', '--upload', '--u']) {
      assert.equal(exec(['git', 'clone', arg, 'repo']).rule, 'exec.allow[0].denyArgs[0]=--upload-pack', arg);
    }
    assert.equal(
      exec(['git', 'clone', '--', 'repo']).allow,
      true,
      'the end-of-options marker is no abbreviation',
    );
    assert.equal(
      exec(['git', 'clone', '--upload-packs', 'repo']).allow,
      true,
      'a longer option is another option',
    );
    assert.equal(exec(['git', 'clone', '--depth=1', 'repo']).allow, true);
  });

  it('refuses a refused short option inside a cluster or with an attached value', () => {
    for (const argv of [
      ['python3', '-c', 'print(1)'],
      ['python3', '-Ic', 'print(1)'],
      ['python3', '-cprint(1)'],
      ['git', '-c', 'core.sshCommand=sh', 'fetch'],
    ]) {
      const decision = exec(argv);
      assert.equal(decision.allow, false, argv.join(' '));
      assert.match(decision.rule, /denyArgs\[\d\]=-c$/, argv.join(' '));
    }
    assert.equal(exec(['python3', 'script.py', '--count']).allow, true, 'long options are not clusters');
    assert.equal(exec(['python3', '-u', 'script.py']).allow, true);
  });

  it('matches glob patterns against whole arguments, across slashes', () => {
    assert.equal(exec(['find', '.', '-fprintf', '/etc/x', '%p']).rule, 'exec.allow[3].denyArgs[2]=-fprint*');
    assert.equal(exec(['find', '.', '-exec', 'rm', '{}', ';']).allow, false);
    assert.equal(
      exec(['git', '--config-env=core.pager=/workspace/evil']).rule,
      'exec.allow[0].denyArgs[2]=--config-env*',
    );
    assert.equal(
      exec(['node', '--require=/workspace/hook.js', 'app.js']).rule,
      'exec.allow[6].denyArgs[0]=--require=*',
    );
    assert.equal(exec(['find', '.', '-name', '*.ts']).allow, true);
  });

  it('applies exec.deny before exec.allow, by name and by absolute path', () => {
    const byName = exec(['curl', 'https://example.com']);
    assert.equal(byName.allow, false);
    assert.equal(byName.rule, 'exec.deny[0]=curl');
    assert.equal(exec(['/usr/bin/curl']).rule, 'exec.deny[0]=curl');
    assert.equal(exec(['/opt/anywhere/curl']).rule, 'exec.deny[0]=curl');
  });

  it('denies a bare name that could resolve to a denied absolute path through exec.path', () => {
    const withWget = sandboxFor({ exec: { allow: [{ name: 'wget' }], deny: ['/usr/bin/wget'] } });
    assert.equal(withWget.check({ type: 'exec', argv: ['wget'] }).rule, 'exec.deny[0]=/usr/bin/wget');
    assert.equal(withWget.check({ type: 'exec', argv: ['/usr/local/bin/wget'] }).allow, true);
  });

  it('denies empty argv, empty argv[0] and NUL bytes in any argument', () => {
    assert.equal(exec([]).rule, 'exec-syntax');
    assert.equal(exec(['']).rule, 'exec-syntax');
    assert.equal(exec(['git', 'log\0--upload-pack=x']).rule, 'exec-syntax');
    assert.equal(
      sandbox.check({ type: 'exec', argv: 'git status' as unknown as string[] }).rule,
      'exec-syntax',
    );
  });

  it('requires the working directory, when given, to be a readable normalised path', () => {
    assert.equal(exec(['ls'], '/workspace/src').allow, true);
    const outside = exec(['ls'], '/etc');
    assert.equal(outside.rule, 'default-deny');
    assert.match(outside.reason, /^working directory: /);
    assert.equal(exec(['ls'], 'workspace').rule, 'path-syntax');
    assert.equal(exec(['ls'], '/workspace/../etc').rule, 'path-syntax');
  });

  it('exposes the fixed search path for the executor', () => {
    assert.deepEqual(sandbox.execPath, ['/usr/local/bin', '/usr/bin', '/bin']);
  });
});

describe('exec rules with an ExecResolver', () => {
  it('resolves a bare name against exec.path only and reports the absolute executable', async () => {
    const decision = await sandbox.enforce({ type: 'exec', argv: ['ls', '-l'] }, { which: fsWhich() });
    assert.equal(decision.rule, 'exec.allow[5]=ls');
    assert.match(decision.resolved ?? '', /^\/(usr\/(local\/)?)?bin\/ls$/);
  });

  it('denies an allowed name that exists nowhere in exec.path', async () => {
    const custom = sandboxFor({ exec: { allow: [{ name: 'no-such-tool-paddock' }] } });
    await assert.rejects(
      custom.enforce({ type: 'exec', argv: ['no-such-tool-paddock'] }, { which: fsWhich() }),
      (e: { code: string; message: string }) => e.code === 'POLICY_DENIED' && /in exec\.path/.test(e.message),
    );
  });

  it('denies when the resolver answers with a path outside exec.path', async () => {
    const rogue: ExecResolver = { which: async (name) => `/workspace/${name}` };
    await assert.rejects(
      sandbox.enforce({ type: 'exec', argv: ['git'] }, { which: rogue }),
      (e: { details: { rule: string } }) => e.details.rule === 'exec-syntax',
    );
  });

  it('denies when the resolved executable is a denied absolute path', async () => {
    const custom = sandboxFor({
      exec: { allow: [{ name: 'ls' }], deny: ['/bin/ls'], path: ['/bin', '/usr/bin'] },
    });
    await assert.rejects(
      custom.enforce({ type: 'exec', argv: ['ls'] }, { which: fsWhich() }),
      (e: { details: { rule: string } }) => e.details.rule === 'exec.deny[0]=/bin/ls',
    );
  });
});
