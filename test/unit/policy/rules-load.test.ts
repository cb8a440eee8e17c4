import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { policySchema } from '../../../src/config/schema.js';
import { createWhitelistSandbox, listPolicyProblems } from '../../../src/policy/index.js';
import { sandboxFor } from './helpers.js';

function loadFails(policy: unknown, rule: string, problem?: RegExp): void {
  assert.throws(
    () => sandboxFor(policy),
    (e: { code: string; message: string; details: { rule: string } }) => {
      assert.equal(e.code, 'INVALID_ARGUMENT');
      assert.equal(e.details.rule, rule);
      assert.ok(e.message.includes(rule), e.message);
      assert.match(e.message, /paddock\.yaml/);
      if (problem) assert.match(e.message, problem);
      return true;
    },
  );
}

describe('loading rules', () => {
  it('refuses domain wildcards that cover everything or a public suffix', () => {
    loadFails({ http: { allow: ['*'] } }, 'http.allow[0]=*', /every host/);
    loadFails({ http: { allow: ['ok.example.com', '*.com'] } }, 'http.allow[1]=*.com', /public suffix/);
    loadFails({ http: { allow: ['*.co.uk'] } }, 'http.allow[0]=*.co.uk', /public suffix/);
    loadFails({ http: { allow: ['*.github.io'] } }, 'http.allow[0]=*.github.io');
    loadFails({ http: { deny: ['*.de'] } }, 'http.deny[0]=*.de');
    loadFails({ http: { allow: ['*.*'] } }, 'http.allow[0]=*.*');
  });

  it('refuses wildcards anywhere but a leading "*."', () => {
    for (const rule of ['api.*.com', '*example.com', 'api.example.*', '**.example.com', '*.*.example.com']) {
      loadFails({ http: { allow: [rule] } }, `http.allow[0]=${rule}`);
    }
    loadFails({ http: { allow: ['*.127.0.0.1'] } }, 'http.allow[0]=*.127.0.0.1');
  });

  it('refuses URLs, paths, empty rules and bad ports in domain rules', () => {
    for (const rule of [
      'https://example.com',
      'example.com/api',
      'user@example.com',
      '',
      ' example.com',
      'example.com:0',
      'example.com:70000',
      'example.com:http',
      'a..b.com',
    ]) {
      loadFails({ http: { allow: [rule] } }, `http.allow[0]=${rule}`);
    }
  });

  it('refuses relative, dotted and empty-segment roots', () => {
    loadFails({ files: { read: ['workspace'] } }, 'files.read[0]=workspace', /absolute/);
    loadFails({ files: { write: ['/workspace', '/ws/../etc'] } }, 'files.write[1]=/ws/../etc');
    loadFails({ files: { deny: ['/ws/./x'] } }, 'files.deny[0]=/ws/./x');
    loadFails({ files: { read: ['//ws'] } }, 'files.read[0]=//ws');
    loadFails({ files: { read: [''] } }, 'files.read[0]=');
  });

  it('refuses empty, wildcard and relative executable names', () => {
    loadFails({ exec: { allow: [{ name: ' ' }] } }, 'exec.allow[0]= ');
    loadFails({ exec: { allow: [{ name: '*' }] } }, 'exec.allow[0]=*', /exactly/);
    loadFails({ exec: { allow: [{ name: 'py*' }] } }, 'exec.allow[0]=py*');
    loadFails({ exec: { allow: [{ name: 'bin/git' }] } }, 'exec.allow[0]=bin/git');
    loadFails({ exec: { allow: [{ name: '..' }] } }, 'exec.allow[0]=..');
    loadFails({ exec: { deny: [''] } }, 'exec.deny[0]=');
  });

  it('refuses an empty argument pattern even when the config schema was bypassed', () => {
    const config = policySchema.parse({});
    config.exec.allow = [{ name: 'git', denyArgs: [''] }];
    assert.throws(() => createWhitelistSandbox(config), /exec\.allow\[0\]\.denyArgs\[0\]=/);
  });

  it('refuses an executable search path or allowed executable in a writable place', () => {
    loadFails({ exec: { path: ['/usr/bin', 'bin'] } }, 'exec.path[1]=bin');
    loadFails(
      { exec: { path: ['/tmp/bin'] }, files: { write: ['/workspace'] } },
      'exec.path[0]=/tmp/bin',
      /anyone/,
    );
    loadFails(
      { exec: { path: ['/workspace/.bin'] } },
      'exec.path[0]=/workspace/.bin',
      /files\.write\[0\]=\/workspace/,
    );
    loadFails({ exec: { allow: [{ name: '/workspace/tool' }] } }, 'exec.allow[0]=/workspace/tool');
  });

  it('accepts every valid rule form', () => {
    const sandbox = sandboxFor({
      files: { read: ['/', '/workspace/'], write: ['/workspace'], deny: ['/workspace/.git'] },
      exec: {
        allow: [{ name: 'git', denyArgs: ['-c', '--upload-pack*'] }, { name: '/opt/tool/bin/x' }],
        deny: ['curl'],
      },
      http: {
        allow: [
          'api.example.com',
          '*.example.com:8443',
          'localhost:8080',
          '127.0.0.1',
          '[::1]:9000',
          '::1',
          '*.bücher.de',
          'intranet',
        ],
        deny: ['10.0.0.1', 'bad.example.com:443'],
      },
    });
    assert.equal(
      sandbox.check({ type: 'http', method: 'GET', url: 'https://x.xn--bcher-kva.de/' }).rule,
      'http.allow[6]=*.bücher.de',
    );
    assert.equal(
      sandbox.check({ type: 'http', method: 'GET', url: 'http://[::1]/' }).rule,
      'http.allow[5]=::1',
    );
  });

  it('denies an action of an unknown type instead of throwing', () => {
    const decision = sandboxFor({}).check({ type: 'socket' } as never);
    assert.equal(decision.allow, false);
    assert.equal(decision.rule, 'invalid-action');
  });
});

describe('listPolicyProblems', () => {
  it('lists every bad rule as a "path: message" line, and nothing for a valid policy', () => {
    const config = policySchema.parse({
      files: { read: ['workspace', '/ok'], write: ['/ws/../x'] },
      exec: { allow: [{ name: 'py*' }, { name: 'git', denyArgs: ['-c'] }], path: ['/tmp/bin'] },
      http: { allow: ['*.com', 'api.example.com', '*'], deny: ['a/b'] },
    });
    const problems = listPolicyProblems(config);
    assert.deepEqual(
      problems.map((line) => line.slice(0, line.indexOf(':'))),
      [
        'policy.files.read.0',
        'policy.files.write.0',
        'policy.exec.path.0',
        'policy.exec.allow.0',
        'policy.http.allow.0',
        'policy.http.allow.2',
        'policy.http.deny.0',
      ],
    );
    assert.match(problems[4]!, /public suffix/);
    assert.deepEqual(listPolicyProblems(policySchema.parse({})), []);
  });
});
