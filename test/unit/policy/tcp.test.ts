import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { policySchema } from '../../../src/config/schema.js';
import { decideAsEnforced, listPolicyProblems, rulePorts } from '../../../src/policy/index.js';
import { isPaddockError } from '../../../src/shared/errors.js';
import { sandboxFor, tableResolver } from './helpers.js';

const policy = {
  http: {
    allow: ['registry.example.com', 'api.example.org:8443'],
    deny: ['blocked.db.internal'],
    hosts: { 'git.example.test': '127.0.0.1' },
    ask: ['*.ask.example.net'],
  },
  tcp: { allow: ['git.example.test:22', '*.db.internal:5432', '10.9.8.7:6379'] },
};
const sandbox = sandboxFor(policy);
const dns = tableResolver({
  'registry.example.com': ['93.184.216.34'],
  'pg.db.internal': ['10.0.0.8'],
  'rebind.example.com': ['127.0.0.1'],
  'x.ask.example.net': ['93.184.216.35'],
});

const tcp = (host: string, port: number) => ({ type: 'tcp' as const, host, port });

describe('the tcp action: any connection of a computer', () => {
  it('allows 80 and 443 by an http.allow rule without a port, and no other port', () => {
    assert.equal(sandbox.check(tcp('registry.example.com', 443)).rule, 'http.allow[0]=registry.example.com');
    assert.equal(sandbox.check(tcp('registry.example.com', 80)).allow, true);
    const other = sandbox.check(tcp('registry.example.com', 22));
    assert.equal(other.allow, false);
    assert.equal(other.rule, 'default-deny');
    assert.match(other.reason, /covers only port the default/);
    assert.equal(sandbox.check(tcp('api.example.org', 8443)).allow, true);
  });

  it('allows a tcp.allow rule on exactly its port, with the wildcard matching subdomains only', () => {
    assert.equal(sandbox.check(tcp('git.example.test', 22)).rule, 'tcp.allow[0]=git.example.test:22');
    assert.equal(sandbox.check(tcp('git.example.test', 2222)).allow, false);
    assert.equal(sandbox.check(tcp('pg.db.internal', 5432)).rule, 'tcp.allow[1]=*.db.internal:5432');
    assert.equal(sandbox.check(tcp('db.internal', 5432)).allow, false);
    assert.equal(sandbox.check(tcp('PG.DB.INTERNAL.', 5432)).allow, true);
  });

  it('applies http.deny before any allow rule, on every port', () => {
    const d = sandbox.check(tcp('blocked.db.internal', 5432));
    assert.equal(d.allow, false);
    assert.equal(d.rule, 'http.deny[0]=blocked.db.internal');
  });

  it('refuses IP literals unless a rule names that address and port', () => {
    assert.equal(sandbox.check(tcp('10.9.8.7', 6379)).allow, true);
    assert.equal(sandbox.check(tcp('10.9.8.7', 6380)).rule, 'ip-literal');
    assert.equal(sandbox.check(tcp('127.0.0.1', 22)).rule, 'ip-literal');
    assert.equal(sandbox.check(tcp('0x7f000001', 22)).rule, 'ip-literal');
    assert.equal(sandbox.check(tcp('[::1]', 22)).rule, 'ip-literal');
  });

  it('marks what http.ask covers as a question, never as allowed', () => {
    const d = sandbox.check(tcp('x.ask.example.net', 443));
    assert.equal(d.allow, false);
    assert.equal(d.ask, true);
    assert.equal(d.rule, 'http.ask[0]=*.ask.example.net');
    assert.equal(sandbox.check(tcp('x.ask.example.net', 22)).ask, undefined);
    const unknown = sandboxFor({ http: { ask: 'unknown', deny: ['no.example.com'] } });
    assert.equal(unknown.check(tcp('anything.example.com', 443)).rule, 'http.ask=unknown');
    // a deny rule or an IP literal is never a question
    assert.equal(unknown.check(tcp('no.example.com', 443)).ask, undefined);
    assert.equal(unknown.check(tcp('192.0.2.1', 443)).ask, undefined);
  });

  it('refuses malformed targets with url-syntax', () => {
    for (const [host, port] of [
      ['', 22],
      ['a b', 22],
      ['evil.test/x', 22],
      ['user@evil.test', 22],
      ['ok.test', 0],
      ['ok.test', 70000],
      ['ok.test', 1.5],
    ] as const) {
      assert.equal(sandbox.check(tcp(host, port)).rule, 'url-syntax', `${host}:${port}`);
    }
  });

  it('vets the resolved addresses with the same guard as http, and pins them', async () => {
    const ok = await sandbox.enforce(tcp('registry.example.com', 443), { dns });
    assert.deepEqual(ok.addresses, ['93.184.216.34']);
    // a wildcard tcp rule does not let a name resolve to a private address
    const privateDb = await decideAsEnforced(sandbox, tcp('pg.db.internal', 5432), dns);
    assert.equal(privateDb.allow, false);
    assert.equal(privateDb.rule, 'forbidden-address');
    // a static map counts as named by a rule
    const mapped = await sandbox.enforce(tcp('git.example.test', 22), { dns });
    assert.deepEqual(mapped.addresses, ['127.0.0.1']);
    await assert.rejects(
      sandbox.enforce(tcp('nowhere.example.com', 443), { dns }),
      (e: unknown) => isPaddockError(e) && e.code === 'POLICY_DENIED',
    );
  });

  it("decides with a person's grants after the deny rules, one host and port each", async () => {
    const grants = [{ entry: 'x.ask.example.net:443', label: 'approval:apr_1' }];
    const d = await sandbox.enforce(tcp('x.ask.example.net', 443), { dns, grants });
    assert.equal(d.rule, 'approval:apr_1');
    assert.deepEqual(d.addresses, ['93.184.216.35']);
    await assert.rejects(
      sandbox.enforce(tcp('blocked.db.internal', 5432), {
        dns,
        grants: [{ entry: 'blocked.db.internal:5432', label: 'approval:apr_2' }],
      }),
      (e: unknown) => isPaddockError(e) && e.details.rule === 'http.deny[0]=blocked.db.internal',
    );
    // a grant that is not one host and port allows nothing
    const wild = sandbox.check(tcp('y.ask.example.net', 443));
    assert.equal(wild.allow, false);
    const none = await decideAsEnforced(sandbox, tcp('y.ask.example.net', 443), {
      lookup: async () => ['93.184.216.36'],
    });
    assert.equal(none.ask, true);
  });

  it('rejects tcp rules without a port or with a bad wildcard, naming the entry', () => {
    const problems = listPolicyProblems(
      policySchema.parse({
        tcp: { allow: ['git.example.test', '*.com:22', 'ok.test:22'] },
        http: { ask: ['*'] },
      }),
    );
    assert.equal(problems.length, 3, problems.join('\n'));
    assert.match(problems[0]!, /^policy\.tcp\.allow\.0: .*names its port/);
    assert.match(problems[1]!, /^policy\.tcp\.allow\.1: .*public suffix/);
    assert.match(problems[2]!, /^policy\.http\.ask\.0: /);
    assert.throws(() => sandboxFor({ tcp: { allow: ['db.internal'] } }), /names its port/);
  });

  it("lists the ports a computer's names listen on: 80, 443 and every port a rule names", () => {
    assert.deepEqual(
      rulePorts(policySchema.parse(policy), [['preview.test:3000']]),
      [22, 80, 443, 3000, 5432, 6379, 8443],
    );
  });
});
