import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { explainDecision, parsePolicyTarget } from '../../../src/policy/index.js';
import { sandboxFor } from './helpers.js';

describe('parsePolicyTarget', () => {
  it('turns a path into a file action', () => {
    assert.deepEqual(parsePolicyTarget('file.read', '/workspace/a.txt'), {
      type: 'file.read',
      path: '/workspace/a.txt',
    });
    assert.deepEqual(parsePolicyTarget('write', '/workspace/a b.txt'), {
      type: 'file.write',
      path: '/workspace/a b.txt',
    });
  });

  it('splits an exec command line on whitespace without shell interpretation', () => {
    assert.deepEqual(parsePolicyTarget('exec', '  git   clone\t--depth=1 "x y" '), {
      type: 'exec',
      argv: ['git', 'clone', '--depth=1', '"x', 'y"'],
    });
  });

  it('reads an http target as URL or METHOD URL', () => {
    assert.deepEqual(parsePolicyTarget('http', 'https://example.com/x'), {
      type: 'http',
      method: 'GET',
      url: 'https://example.com/x',
    });
    assert.deepEqual(parsePolicyTarget('http', 'post https://example.com/x'), {
      type: 'http',
      method: 'POST',
      url: 'https://example.com/x',
    });
    assert.throws(() => parsePolicyTarget('http', 'GET https://a https://b'), /METHOD URL/);
  });

  it('reads a tcp target as host:port, with brackets for IPv6, and refuses anything else', () => {
    assert.deepEqual(parsePolicyTarget('tcp', 'git.example.test:22'), {
      type: 'tcp',
      host: 'git.example.test',
      port: 22,
    });
    assert.deepEqual(parsePolicyTarget('tcp', '[2001:db8::1]:5432'), {
      type: 'tcp',
      host: '2001:db8::1',
      port: 5432,
    });
    for (const bad of ['git.example.test', 'ssh://git.example.test:22', 'a:b:c', 'host:99999999'])
      assert.throws(() => parsePolicyTarget('tcp', bad), /host:port/);
  });

  it('rejects unknown actions and empty targets with INVALID_ARGUMENT', () => {
    assert.throws(
      () => parsePolicyTarget('shell', 'ls'),
      (e: { code: string; message: string }) =>
        e.code === 'INVALID_ARGUMENT' && /file\.read, file\.write, exec, http or tcp/.test(e.message),
    );
    assert.throws(
      () => parsePolicyTarget('exec', '   '),
      (e: { code: string }) => e.code === 'INVALID_ARGUMENT',
    );
  });
});

describe('explainDecision', () => {
  const sandbox = sandboxFor({
    files: { read: ['/workspace'], write: ['/workspace'] },
    http: { allow: ['127.0.0.1:8080'] },
  });

  it('prints allow or deny with the deciding rule and reason', () => {
    const allowed = explainDecision(sandbox.check(parsePolicyTarget('file.read', '/workspace/x')));
    assert.match(allowed, /^allow {2}rule: files\.read\[0\]=\/workspace\n {2}reason: /);
    const denied = explainDecision(sandbox.check(parsePolicyTarget('file.write', '/etc/passwd')));
    assert.match(denied, /^deny {2}rule: default-deny\n {2}reason: .*files\.write/);
  });

  it('adds the vetted addresses and the resolved target when known', () => {
    const text = explainDecision(sandbox.check(parsePolicyTarget('http', 'http://2130706433:8080/')));
    assert.match(text, /addresses: 127\.0\.0\.1/);
    assert.match(
      explainDecision({ allow: true, rule: 'r', reason: 'x', resolved: '/usr/bin/git' }),
      /resolved: \/usr\/bin\/git/,
    );
  });
});
