import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { storeSchema } from '../../../src/config/store-schema.js';
import { PaddockError } from '../../../src/shared/errors.js';
import { openStores } from '../../../src/store/open.js';
import { resolveStoreTarget } from '../../../src/store/target.js';

const problems = (value: unknown) => {
  const parsed = storeSchema.safeParse(value);
  return parsed.success ? [] : parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`);
};

describe('store configuration', () => {
  it('uses the embedded database in the data directory unless store.url names another', () => {
    assert.deepEqual(resolveStoreTarget(undefined, '/data'), { kind: 'sqlite', file: '/data/paddock.db' });
    assert.deepEqual(resolveStoreTarget({ url: 'sqlite:' }, '/data'), {
      kind: 'sqlite',
      file: '/data/paddock.db',
    });
    assert.deepEqual(resolveStoreTarget({ url: 'sqlite:other.db' }, '/data'), {
      kind: 'sqlite',
      file: '/data/other.db',
    });
    assert.deepEqual(resolveStoreTarget({ url: 'sqlite:/srv/p.db' }, '/data'), {
      kind: 'sqlite',
      file: '/srv/p.db',
    });
  });

  it('refuses a password in the URL, naming the environment variable and store.passwordFile', () => {
    const [problem] = problems({ url: 'postgres://paddock:hunter2@db:5432/paddock' });
    assert.match(problem ?? '', /^url: holds a password.*PADDOCK_STORE_PASSWORD.*store\.passwordFile/);
    assert.ok(!problem?.includes('hunter2'));
    assert.throws(
      () => resolveStoreTarget({ url: 'postgres://paddock:hunter2@db/paddock' }, '/data'),
      (e: unknown) => e instanceof PaddockError && /PADDOCK_STORE_PASSWORD/.test(e.message),
    );
    assert.match(problems({ url: 'mysql://db/p' })[0] ?? '', /unknown store scheme/);
    assert.match(problems({ url: 'not a url' })[0] ?? '', /not a URL/);
    assert.deepEqual(problems({ url: 'postgres://paddock@db:5432/paddock' }), []);
  });

  it('takes the password from store.passwordFile, else from PADDOCK_STORE_PASSWORD', () => {
    const dir = mkdtempSync(join(tmpdir(), 'paddock-store-'));
    try {
      const file = join(dir, 'pw');
      writeFileSync(file, 's3cret\n', { mode: 0o600 });
      const url = 'postgres://paddock@db/paddock';
      const env = { PADDOCK_STORE_PASSWORD: 'from-env' };
      assert.deepEqual(resolveStoreTarget({ url, passwordFile: file }, dir, env), {
        kind: 'postgres',
        url,
        password: 's3cret',
      });
      assert.equal((resolveStoreTarget({ url }, dir, env) as { password?: string }).password, 'from-env');
      assert.equal((resolveStoreTarget({ url }, dir, {}) as { password?: string }).password, undefined);
      assert.throws(
        () => resolveStoreTarget({ url, passwordFile: join(dir, 'missing') }, dir, env),
        /Cannot read store\.passwordFile/,
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('opens a postgres:// URL as the PostgreSQL stores, naming an unreachable database as a start-up fault', async () => {
    await assert.rejects(
      openStores({ url: 'postgres://paddock@127.0.0.1:1/paddock' }, { dataDir: '/nonexistent', env: {} }),
      (e: unknown) =>
        e instanceof PaddockError &&
        e.details.startup === true &&
        /Cannot reach the PostgreSQL database "paddock" at 127\.0\.0\.1:1/.test(e.message),
    );
  });
});
