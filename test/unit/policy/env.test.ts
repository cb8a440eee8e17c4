import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { DANGEROUS_ENV_VARS, isDangerousEnvName, sanitizeEnv } from '../../../src/policy/index.js';
import { sandboxFor } from './helpers.js';

describe('sanitizeEnv', () => {
  const sandbox = sandboxFor({});

  it('strips LD_PRELOAD and every other LD_* variable', () => {
    const clean = sandbox.sanitizeEnv({
      LD_PRELOAD: '/workspace/evil.so',
      LD_LIBRARY_PATH: '/workspace',
      LD_AUDIT: '/workspace/a.so',
      LD_DEBUG_OUTPUT: '/tmp/x',
      HOME: '/home/agent',
    });
    assert.deepEqual(clean, { HOME: '/home/agent' });
  });

  it('strips shell, interpreter and helper-program hooks', () => {
    const env: Record<string, string> = {};
    for (const name of DANGEROUS_ENV_VARS) env[name] = 'x';
    Object.assign(env, {
      'BASH_FUNC_ls%%': '() { id; }',
      BASH_FUNC_git: '() { id; }',
      npm_config_script_shell: '/workspace/sh',
      NPM_CONFIG_NODE_OPTIONS: '--require x',
    });
    assert.deepEqual(sanitizeEnv(env), {});
    for (const name of [
      'BASH_ENV',
      'ENV',
      'NODE_OPTIONS',
      'PYTHONSTARTUP',
      'PYTHONPATH',
      'PERL5OPT',
      'RUBYOPT',
    ]) {
      assert.equal(isDangerousEnvName(name), true, name);
    }
    for (const name of ['PROMPT_COMMAND', 'SHELLOPTS', 'BASHOPTS', 'IFS', 'PATH']) {
      assert.equal(isDangerousEnvName(name), true, name);
    }
  });

  it('strips git config, hook and helper variables but keeps commit identity', () => {
    const clean = sanitizeEnv({
      GIT_CONFIG: '/workspace/c',
      GIT_CONFIG_GLOBAL: '/workspace/c',
      GIT_CONFIG_COUNT: '1',
      GIT_CONFIG_KEY_0: 'core.fsmonitor',
      GIT_CONFIG_VALUE_0: 'touch /tmp/x',
      GIT_CONFIG_PARAMETERS: "'core.pager=sh'",
      GIT_EXEC_PATH: '/workspace',
      GIT_SSH: '/workspace/ssh',
      GIT_SSH_COMMAND: 'sh -c id',
      GIT_ASKPASS: '/workspace/p',
      GIT_PROXY_COMMAND: '/workspace/p',
      GIT_EXTERNAL_DIFF: '/workspace/d',
      GIT_TEMPLATE_DIR: '/workspace/t',
      GIT_DIR: '/other/.git',
      GIT_AUTHOR_NAME: 'Agent',
      GIT_COMMITTER_EMAIL: 'agent@example.com',
      GIT_TERMINAL_PROMPT: '0',
    });
    assert.deepEqual(clean, {
      GIT_AUTHOR_NAME: 'Agent',
      GIT_COMMITTER_EMAIL: 'agent@example.com',
      GIT_TERMINAL_PROMPT: '0',
    });
  });

  it('keeps ordinary variables untouched and does not modify its input', () => {
    const env = { LANG: 'C.UTF-8', TERM: 'xterm-256color', CI: '1', PYTHONUNBUFFERED: '1', LD_PRELOAD: 'x' };
    const clean = sanitizeEnv(env);
    assert.deepEqual(clean, { LANG: 'C.UTF-8', TERM: 'xterm-256color', CI: '1', PYTHONUNBUFFERED: '1' });
    assert.equal(env.LD_PRELOAD, 'x');
  });

  it('drops malformed names and values', () => {
    const env = JSON.parse('{"__proto__":"x","A=B":"1","":"2","OK":"a\\u0000b","FINE":"yes"}') as Record<
      string,
      string
    >;
    assert.deepEqual({ ...sanitizeEnv(env) }, { FINE: 'yes' });
  });

  it('is case-sensitive like the environment itself (ld_preload is not LD_PRELOAD)', () => {
    assert.deepEqual(sanitizeEnv({ ld_preload: 'x', Path: 'y' }), { ld_preload: 'x', Path: 'y' });
  });
});
