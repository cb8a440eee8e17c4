import assert from 'node:assert/strict';
import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { loadHeadKey, signatureValid, signHead } from '../../../src/audit/signing.js';

const dir = mkdtempSync(join(tmpdir(), 'paddock-sign-'));
after(() => rmSync(dir, { recursive: true, force: true }));

function keyFile(name: string, type: 'ed25519' | 'rsa' = 'ed25519', part: 'private' | 'public' = 'private') {
  const pair =
    type === 'rsa' ? generateKeyPairSync('rsa', { modulusLength: 2048 }) : generateKeyPairSync('ed25519');
  const pem =
    part === 'private'
      ? pair.privateKey.export({ type: 'pkcs8', format: 'pem' })
      : pair.publicKey.export({ type: 'spki', format: 'pem' });
  writeFileSync(join(dir, name), pem);
  return { path: join(dir, name), pair };
}

describe('signed heads of the audit chain', () => {
  it('a signature holds for the exact head and time, and fails for any change or another key', () => {
    const { path } = keyFile('a.pem');
    const key = loadHeadKey(path);
    const signed = signHead({ endSeq: 42, hash: 'ab'.repeat(32) }, key, new Date('2026-01-01T00:00:00Z'));
    assert.equal(signatureValid(signed, key), true);
    for (const forged of [
      { ...signed, endSeq: 41 },
      { ...signed, hash: 'cd'.repeat(32) },
      { ...signed, at: '2026-01-01T00:00:01.000Z' },
    ])
      assert.equal(signatureValid(forged, key), false);
    assert.equal(signatureValid(signed, loadHeadKey(keyFile('b.pem').path)), false);
  });

  it('verifies with the public key alone, which cannot sign', () => {
    const { path, pair } = keyFile('c.pem');
    writeFileSync(join(dir, 'c.pub'), pair.publicKey.export({ type: 'spki', format: 'pem' }));
    const publicOnly = loadHeadKey(join(dir, 'c.pub'));
    const signed = signHead({ endSeq: 1, hash: '0'.repeat(64) }, loadHeadKey(path));
    assert.equal(signatureValid(signed, publicOnly), true);
    assert.throws(() => signHead({ endSeq: 1, hash: '0'.repeat(64) }, publicOnly), /private key/);
  });

  it('refuses a key inside the data directory (also through a symlink) and a key that is not Ed25519', () => {
    const { path } = keyFile('inside.pem');
    assert.throws(() => loadHeadKey(path, dir), /inside the data directory/);
    const outside = mkdtempSync(join(tmpdir(), 'paddock-sign-link-'));
    try {
      symlinkSync(path, join(outside, 'looks-outside.pem'));
      assert.throws(() => loadHeadKey(join(outside, 'looks-outside.pem'), dir), /inside the data directory/);
      assert.ok(loadHeadKey(path, outside).privateKey, 'a key outside the data directory is taken');
    } finally {
      rmSync(outside, { recursive: true, force: true });
    }
    assert.throws(() => loadHeadKey(keyFile('rsa.pem', 'rsa').path), /not an Ed25519 PEM key/);
    assert.throws(() => loadHeadKey(join(dir, 'missing.pem')), /Cannot read the audit signing key/);
  });
});
