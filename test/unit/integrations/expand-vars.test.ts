// biome-ignore-all lint/suspicious/noTemplateCurlyInString: these tests are about the literal ${VAR} syntax
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { expandVars } from '../../../src/integrations/expand-vars.js';

const env = { TOKEN: 'abc', EMPTY: '', HOME: '/home/u' };

describe('expandVars', () => {
  test('replaces ${VAR} with its value, several times in one string', () => {
    assert.deepEqual(expandVars('Bearer ${TOKEN} at ${HOME}/x', env), {
      ok: true,
      value: 'Bearer abc at /home/u/x',
    });
  });

  test('uses the default of ${VAR:-default} when the variable is unset or empty', () => {
    assert.deepEqual(expandVars('${MISSING:-http://localhost:1}', env), {
      ok: true,
      value: 'http://localhost:1',
    });
    assert.deepEqual(expandVars('${EMPTY:-fallback}', env), { ok: true, value: 'fallback' });
    assert.deepEqual(expandVars('${TOKEN:-unused}', env), { ok: true, value: 'abc' });
  });

  test('keeps an empty but set variable as an empty string', () => {
    assert.deepEqual(expandVars('[${EMPTY}]', env), { ok: true, value: '[]' });
  });

  test('reports an unset variable by name with how to fix it', () => {
    const r = expandVars('${GITHUB_TOKEN}', env);
    assert.equal(r.ok, false);
    assert.match(
      !r.ok ? r.problems[0]! : '',
      /variable GITHUB_TOKEN is not set.*\$\{GITHUB_TOKEN:-default\}/,
    );
  });

  test('reports every unset variable of a string', () => {
    const r = expandVars('${A}-${B}', {});
    assert.equal(!r.ok && r.problems.length, 2);
  });

  test('rejects an unterminated reference and a reference that is not a variable name', () => {
    assert.match(JSON.stringify(expandVars('x ${TOKEN', env)), /unterminated/);
    assert.match(JSON.stringify(expandVars('${1abc}', env)), /not a variable reference/);
    assert.match(JSON.stringify(expandVars('${}', env)), /not a variable reference/);
  });

  test('leaves a lone $ and $VAR without braces as they are', () => {
    assert.deepEqual(expandVars('cost $5 and $TOKEN', env), { ok: true, value: 'cost $5 and $TOKEN' });
  });
});
