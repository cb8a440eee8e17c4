import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { jksDigestValid, jksWithCertificate } from '../../../src/net/egress/java-truststore.js';
import { loadTerminatingCa } from '../../../src/net/egress/tls-ca.js';

const SYSTEM_STORE = '/etc/ssl/certs/java/cacerts';

describe("the JVM's trust store with the egress CA", () => {
  const noJava = !existsSync(SYSTEM_STORE) || !existsSync('/usr/bin/keytool');
  it('adds the CA to the system store as a trusted certificate that keytool verifies and lists', {
    skip: noJava && 'this machine has no Java trust store or keytool',
  }, () => {
    const dir = mkdtempSync(join(tmpdir(), 'paddock-jks-'));
    try {
      const ca = loadTerminatingCa(join(dir, 'ca'));
      const before = readFileSync(SYSTEM_STORE);
      const store = jksWithCertificate(before, ca.certPem, 'paddock-egress');
      assert.ok(store);
      assert.ok(jksDigestValid(store));
      assert.equal(store.readUInt32BE(8), before.readUInt32BE(8) + 1);
      const file = join(dir, 'cacerts');
      writeFileSync(file, store);
      const listed = execFileSync(
        'keytool',
        ['-list', '-keystore', file, '-storepass', 'changeit', '-alias', 'paddock-egress'],
        {
          encoding: 'utf8',
        },
      );
      assert.match(listed, /trustedCertEntry/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('leaves a store it does not understand alone', () => {
    assert.equal(jksWithCertificate(Buffer.from('not a keystore at all, just text'), '', 'x'), null);
  });
});
