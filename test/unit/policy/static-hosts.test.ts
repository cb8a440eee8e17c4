import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { profileSchema } from '../../../src/config/computer-schema.js';
import { isPaddockError } from '../../../src/shared/errors.js';
import { sandboxFor, tableResolver } from './helpers.js';

describe('policy.http.hosts (static name → address map)', () => {
  const sandbox = sandboxFor({
    http: {
      allow: ['registry.internal:8080', 'pkgs.internal'],
      deny: ['10.9.9.9'],
      hosts: {
        'registry.internal': '127.0.0.1',
        'pkgs.internal': ['10.0.0.7', '10.0.0.8'],
        'bad.internal': '10.9.9.9',
      },
    },
  });

  it('answers a mapped name with its listed addresses, which pass the private-address guard, without asking DNS', async () => {
    const dns = tableResolver({ 'registry.internal': ['93.184.216.34'] });
    const d = await sandbox.enforce(
      { type: 'http', method: 'GET', url: 'http://registry.internal:8080/' },
      { dns },
    );
    assert.deepEqual(d.addresses, ['127.0.0.1']);
    const both = await sandbox.enforce({ type: 'http', method: 'GET', url: 'https://pkgs.internal/' });
    assert.deepEqual(both.addresses, ['10.0.0.7', '10.0.0.8']);
  });

  it('does not allow a mapped name by itself: an allow rule must still name it, and http.deny still refuses the address', async () => {
    const only = sandboxFor({ http: { allow: [], hosts: { 'registry.internal': '127.0.0.1' } } });
    await assert.rejects(
      only.enforce({ type: 'http', method: 'GET', url: 'http://registry.internal/' }),
      (e: unknown) => isPaddockError(e) && e.details.rule === 'default-deny',
    );
    const denied = sandboxFor({
      http: { allow: ['bad.internal'], deny: ['10.9.9.9'], hosts: { 'bad.internal': '10.9.9.9' } },
    });
    await assert.rejects(
      denied.enforce({ type: 'http', method: 'GET', url: 'http://bad.internal/' }),
      (e: unknown) => isPaddockError(e) && e.details.rule === 'http.deny[0]=10.9.9.9',
    );
  });

  it('refuses at load a key that is not a host name and a value that is not an address', () => {
    for (const hosts of [
      { '127.0.0.1': '127.0.0.1' },
      { '*.x.test': '127.0.0.1' },
      { 'a.test': 'not-an-ip' },
      { 'a.test:80': '1.2.3.4' },
    ]) {
      assert.throws(
        () => sandboxFor({ http: { hosts } }),
        (e: unknown) =>
          isPaddockError(e) &&
          e.code === 'INVALID_ARGUMENT' &&
          /policy\.http\.hosts/.test(String(e.details.path)),
        JSON.stringify(hosts),
      );
    }
  });
});

describe('profile network settings', () => {
  it('accepts networkMode as the short form of network.mode, defaults to none and refuses a contradiction', () => {
    const base = { id: 'p', name: 'P' };
    assert.equal(profileSchema.parse(base).network.mode, 'none');
    assert.equal(profileSchema.parse({ ...base, networkMode: 'proxy' }).network.mode, 'proxy');
    const full = profileSchema.parse({ ...base, network: { mode: 'proxy', allow: ['pkgs.internal'] } });
    assert.equal(full.networkMode, 'proxy');
    assert.deepEqual(full.network.allow, ['pkgs.internal']);
    assert.deepEqual(profileSchema.parse(full), full);
    assert.equal(
      profileSchema.safeParse({ ...base, networkMode: 'none', network: { mode: 'proxy' } }).success,
      false,
    );
  });
});
