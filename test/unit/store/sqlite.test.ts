/** The shared store suite on the embedded SQLite stores: one file per database name. */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe } from 'node:test';
import { silentLogger } from '../../../src/shared/logger.js';
import { openStores } from '../../../src/store/open.js';
import { storeContract } from './contract.js';

describe('stores on SQLite', () => {
  const dir = mkdtempSync(join(tmpdir(), 'paddock-stores-'));
  after(() => rmSync(dir, { recursive: true, force: true }));
  storeContract(async (name) => {
    const stores = await openStores(
      { url: `sqlite:${name}.db` },
      { dataDir: dir, logger: silentLogger(), serverId: `srv_${name}` },
    );
    return { stores, cleanup: () => stores.close() };
  });
});
