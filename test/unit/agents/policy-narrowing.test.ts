import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  buildAgentSandbox,
  intersectSandboxes,
  narrowPolicyConfig,
} from '../../../src/agents/policy-narrowing.js';
import { policySchema } from '../../../src/config/schema.js';
import { judgePath } from '../../../src/guest/path-scope.js';
import { createWhitelistSandbox } from '../../../src/policy/index.js';
import type { HostResolver } from '../../../src/policy/types.js';
import { PaddockError } from '../../../src/shared/errors.js';

const globalConfig = policySchema.parse({
  files: { read: ['/workspace', '/tmp'], write: ['/workspace'] },
  exec: { allow: [{ name: 'git' }, { name: 'ls' }] },
  http: { allow: ['api.github.com', '*.slack.com'] },
});
const global = createWhitelistSandbox(globalConfig);

/** A resolver that answers from a table and counts the questions (a real interface, test data). */
function countingDns(table: Record<string, string[]>): HostResolver & { asked: string[] } {
  const asked: string[] = [];
  return {
    asked,
    async lookup(host) {
      asked.push(host);
      return table[host] ?? [];
    },
  };
}

describe('agent policy narrowing', () => {
  it('refuses what the agent narrows away even though the global policy allows it', async () => {
    const { sandbox } = buildAgentSandbox(global, globalConfig, { http: { allow: ['api.github.com'] } });
    const slack = { type: 'http' as const, method: 'POST', url: 'https://hooks.slack.com/x' };
    assert.equal(global.check(slack).allow, true);
    const decision = sandbox.check(slack);
    assert.equal(decision.allow, false);
    assert.match(decision.rule, /^agent:/);
    await assert.rejects(
      sandbox.enforce(slack),
      (e: unknown) =>
        e instanceof PaddockError &&
        e.code === 'POLICY_DENIED' &&
        /^agent:/.test(String(e.details.rule)) &&
        e.message.startsWith("Refused by the agent's own policy (AGENT.md): "),
    );
  });

  it('cannot widen: an allow entry the global policy lacks still fails, and is reported as moot', async () => {
    const built = buildAgentSandbox(global, globalConfig, {
      http: { allow: ['example.org'] },
      files: { write: ['/etc'] },
      exec: { allow: [{ name: 'curl', denyArgs: [] }] },
    });
    assert.equal(
      built.sandbox.check({ type: 'http', method: 'GET', url: 'https://example.org/' }).allow,
      false,
    );
    assert.equal(built.sandbox.check({ type: 'file.write', path: '/etc/passwd' }).allow, false);
    assert.equal(built.sandbox.check({ type: 'exec', argv: ['curl'] }).allow, false);
    await assert.rejects(
      built.sandbox.enforce({ type: 'http', method: 'GET', url: 'https://example.org/' }),
      {
        code: 'POLICY_DENIED',
      },
    );
    assert.equal(built.warnings.length, 3, built.warnings.join('\n'));
    assert.match(built.warnings.join('\n'), /policy\.http\.allow: "example\.org"/);
    assert.match(built.warnings.join('\n'), /policy\.files\.write: "\/etc"/);
    assert.match(built.warnings.join('\n'), /policy\.exec\.allow: "curl"/);
  });

  it('allows what both allow, naming both rules, and sees one DNS answer for both checks', async () => {
    const { sandbox } = buildAgentSandbox(global, globalConfig, { http: { allow: ['api.github.com'] } });
    const dns = countingDns({ 'api.github.com': ['140.82.112.6'] });
    const decision = await sandbox.enforce(
      { type: 'http', method: 'GET', url: 'https://api.github.com/' },
      { dns },
    );
    assert.equal(decision.allow, true);
    assert.match(
      decision.rule,
      /^http\.allow\[0\]=api\.github\.com & agent:http\.allow\[0\]=api\.github\.com$/,
    );
    assert.deepEqual(decision.addresses, ['140.82.112.6']);
    assert.deepEqual(dns.asked, ['api.github.com'], 'the host is resolved once for both policies');
  });

  it('refuses a target the agent refuses without asking DNS or the path resolver', async () => {
    const { sandbox } = buildAgentSandbox(global, globalConfig, {
      http: { allow: ['api.github.com'] },
      files: { read: ['/workspace/docs'] },
    });
    const dns = countingDns({});
    await assert.rejects(
      sandbox.enforce({ type: 'http', method: 'GET', url: 'https://x.slack.com/' }, { dns }),
      {
        code: 'POLICY_DENIED',
      },
    );
    assert.deepEqual(dns.asked, []);
  });

  it('hands the guest both rule sets, so a symlink out of the agent root is refused where it leads', () => {
    const { sandbox } = buildAgentSandbox(global, globalConfig, {
      files: { read: ['/workspace/docs'], deny: ['/workspace/docs/private'] },
    });
    const scope = sandbox.fileScope('read');
    assert.equal(scope.kind, 'read');
    assert.equal(scope.sets.length, 2, 'the global set and the agent set, both applied');
    assert.deepEqual(
      scope.sets[1]?.allow.map((r) => [r.label, r.root]),
      [['agent:files.read[0]=/workspace/docs', '/workspace/docs']],
    );
    assert.equal(judgePath(scope, '/workspace/private/key').allow, false, 'outside the agent root');
    assert.equal(judgePath(scope, '/workspace/docs/private/x').allow, false, 'under the agent deny root');
    const ok = judgePath(scope, '/workspace/docs/readme.md');
    assert.ok(ok.allow);
    assert.match(ok.rule, /^files\.read\[0\]=\/workspace & agent:files\.read\[0\]=\/workspace\/docs$/);
  });

  it('keeps global lists the agent does not give, adds deny lists, and never changes exec.path', () => {
    const narrowed = narrowPolicyConfig(globalConfig, {
      http: { deny: ['evil.slack.com'] },
      exec: { deny: ['ls'] },
    });
    assert.deepEqual(narrowed.http.allow, globalConfig.http.allow);
    assert.deepEqual(narrowed.http.deny, ['evil.slack.com']);
    assert.deepEqual(narrowed.exec.allow, globalConfig.exec.allow);
    assert.deepEqual(narrowed.exec.deny, ['ls']);
    assert.deepEqual(narrowed.exec.path, globalConfig.exec.path);
    assert.deepEqual(narrowed.files, globalConfig.files);
  });

  it('sanitises the environment through both policies', () => {
    const both = intersectSandboxes(global, global);
    assert.deepEqual(both.sanitizeEnv({ LD_PRELOAD: '/x.so', HOME: '/home/a' }), { HOME: '/home/a' });
  });
});
