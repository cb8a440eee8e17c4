import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createSystemHostResolver } from '../../../src/policy/index.js';
import { sandboxFor, tableResolver } from './helpers.js';

const sandbox = sandboxFor({
  http: {
    allow: [
      '*.example.com',
      'internal.corp',
      '10.0.0.5',
      'localhost:8080',
      'loopy.example.org:8080',
      '127.0.0.1:8080',
    ],
    deny: ['203.0.113.66'],
  },
});

const dns = tableResolver({
  'public.example.com': ['93.184.216.34', '2606:2800:220:1:248:1893:25c8:1946'],
  'rebind.example.com': ['127.0.0.1'],
  'v6loop.example.com': ['::1'],
  'mapped.example.com': ['::ffff:127.0.0.1'],
  'private.example.com': ['10.1.2.3'],
  'metadata.example.com': ['169.254.169.254'],
  'ec2v6.example.com': ['fd00:ec2::254'],
  'cgnat.example.com': ['100.64.1.1'],
  'zero.example.com': ['0.0.0.0'],
  'multicast.example.com': ['224.0.0.251'],
  'mixed.example.com': ['93.184.216.34', '192.168.1.10'],
  'internal.corp': ['10.0.0.5'],
  'blocked.example.com': ['203.0.113.66'],
  'empty.example.com': [],
  'garbage.example.com': ['not-an-ip'],
  localhost: ['127.0.0.1', '::1'],
  'loopy.example.org': ['127.0.0.1'],
});

async function deniedRule(url: string): Promise<string> {
  try {
    await sandbox.enforce({ type: 'http', method: 'GET', url }, { dns });
  } catch (e) {
    const err = e as { code: string; details: { rule: string } };
    assert.equal(err.code, 'POLICY_DENIED', url);
    return err.details.rule;
  }
  assert.fail(`expected ${url} to be denied`);
}

describe('domain rules with a HostResolver', () => {
  it('allows a name that resolves to public addresses and returns them for pinning', async () => {
    const decision = await sandbox.enforce(
      { type: 'http', method: 'GET', url: 'https://public.example.com/' },
      { dns },
    );
    assert.equal(decision.rule, 'http.allow[0]=*.example.com');
    assert.deepEqual(decision.addresses, ['93.184.216.34', '2606:2800:220:1:248:1893:25c8:1946']);
  });

  it('denies a name that resolves to loopback when no rule names loopback', async () => {
    for (const host of ['rebind', 'v6loop', 'mapped']) {
      assert.equal(await deniedRule(`https://${host}.example.com/`), 'forbidden-address', host);
    }
  });

  it('denies names resolving to private, metadata, CGNAT, unspecified and multicast addresses', async () => {
    for (const host of ['private', 'metadata', 'ec2v6', 'cgnat', 'zero', 'multicast']) {
      assert.equal(await deniedRule(`https://${host}.example.com/`), 'forbidden-address', host);
    }
    await assert.rejects(
      sandbox.enforce({ type: 'http', method: 'GET', url: 'https://metadata.example.com/' }, { dns }),
      /cloud metadata/,
    );
  });

  it('denies a name when any one of its addresses is forbidden', async () => {
    assert.equal(await deniedRule('https://mixed.example.com/'), 'forbidden-address');
  });

  it('allows a private address that an allow rule names exactly', async () => {
    const decision = await sandbox.enforce(
      { type: 'http', method: 'GET', url: 'http://internal.corp/' },
      { dns },
    );
    assert.equal(decision.rule, 'http.allow[1]=internal.corp');
    assert.deepEqual(decision.addresses, ['10.0.0.5']);
  });

  it('lets a localhost rule reach loopback, and nothing else', async () => {
    const decision = await sandbox.enforce(
      { type: 'http', method: 'GET', url: 'http://localhost:8080/' },
      { dns },
    );
    assert.equal(decision.rule, 'http.allow[3]=localhost:8080');
    assert.deepEqual(decision.addresses, ['127.0.0.1', '::1']);
    const odd = tableResolver({ localhost: ['93.184.216.34'] });
    await assert.rejects(
      sandbox.enforce({ type: 'http', method: 'GET', url: 'http://localhost:8080/' }, { dns: odd }),
      /not loopback/,
    );
  });

  it('lets a loopback address named with a port through only on that port', async () => {
    const decision = await sandbox.enforce(
      { type: 'http', method: 'GET', url: 'http://loopy.example.org:8080/' },
      { dns },
    );
    assert.equal(decision.rule, 'http.allow[4]=loopy.example.org:8080');
  });

  it('applies deny rules naming an address to names that resolve to it', async () => {
    assert.equal(await deniedRule('https://blocked.example.com/'), 'http.deny[0]=203.0.113.66');
  });

  it('denies empty or malformed resolver answers', async () => {
    assert.equal(await deniedRule('https://empty.example.com/'), 'forbidden-address');
    assert.equal(await deniedRule('https://garbage.example.com/'), 'forbidden-address');
  });

  it('reports a failed lookup as UPSTREAM_ERROR naming the host', async () => {
    await assert.rejects(
      sandbox.enforce({ type: 'http', method: 'GET', url: 'https://nxdomain.example.com/' }, { dns }),
      (e: { code: string; message: string }) =>
        e.code === 'UPSTREAM_ERROR' && /nxdomain\.example\.com \(ENOTFOUND\)/.test(e.message),
    );
  });

  it('does not resolve IP literals or names the lexical check already denied', async () => {
    const counting = tableResolver({});
    const decision = await sandbox.enforce(
      { type: 'http', method: 'GET', url: 'http://127.0.0.1:8080/' },
      { dns: counting },
    );
    assert.deepEqual(decision.addresses, ['127.0.0.1']);
    await assert.rejects(
      sandbox.enforce({ type: 'http', method: 'GET', url: 'https://other.net/' }, { dns: counting }),
    );
    assert.deepEqual(counting.calls, []);
  });

  it('resolves through the system resolver: localhost is loopback', async () => {
    const system = createSystemHostResolver({ timeoutMs: 5000 });
    const found = await system.lookup('localhost');
    assert.ok(found.includes('127.0.0.1') || found.includes('::1'), found.join(','));
    const local = sandboxFor({ http: { allow: ['localhost:8080'] } });
    const decision = await local.enforce(
      { type: 'http', method: 'GET', url: 'http://localhost:8080/' },
      { dns: system },
    );
    assert.equal(decision.rule, 'http.allow[0]=localhost:8080');
  });
});
