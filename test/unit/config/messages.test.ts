import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ConfigError, validateConfigText } from '../../../src/config/load.js';

function problemsOf(yaml: string): string[] {
  try {
    validateConfigText('paddock.yaml', yaml);
  } catch (e) {
    assert.ok(e instanceof ConfigError, String(e));
    return e.problems;
  }
  assert.fail('the configuration was accepted');
}

describe('configuration errors a person reads', () => {
  it('reports every problem at once, in words, each with the line to write instead', () => {
    const problems = problemsOf(
      [
        'server:',
        '  prot: 7420',
        '  port: "7420"',
        'computer:',
        '  profiles:',
        '    - id: web',
        '      name: Web',
        '      network: proxy',
        'log:',
        '  level: loud',
      ].join('\n'),
    );
    assert.equal(problems.length, 4, problems.join('\n---\n'));
    const text = problems.join('\n');
    assert.match(text, /server: unknown key "prot" — did you mean "port"\?/);
    assert.match(text, /server\.port: expected a number, got the text "7420"/);
    assert.match(text, /computer\.profiles\.0\.network: .*did you mean `network: \{ mode: proxy \}`\?/);
    // the fix as YAML at its place in the file
    assert.match(text, /computer:\n\s+profiles:\n\s+- network: \{ mode: proxy \}/);
    assert.match(text, /log\.level: .*one of debug, info, warn, error/);
    assert.doesNotMatch(text, /Invalid input/);
  });

  it('suggests nothing when no key is close', () => {
    const [only] = problemsOf('server:\n  zzzzzzzz: 1\n');
    assert.equal(
      only,
      'server: unknown key "zzzzzzzz" (known keys: host, port, auth, publicUrl, stalledPeerSeconds, allowedHosts, oauth)',
    );
  });
});
