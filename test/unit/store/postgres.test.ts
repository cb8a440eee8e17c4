/** The shared store suite on PostgreSQL: one database of a throwaway cluster per database name. */
import { after, before, describe } from 'node:test';
import { silentLogger } from '../../../src/shared/logger.js';
import { openStores } from '../../../src/store/open.js';
import { type PgCluster, startPostgres } from '../../helpers/postgres.js';
import { storeContract } from './contract.js';

describe('stores on PostgreSQL', () => {
  let cluster: PgCluster;
  const created = new Map<string, Promise<string>>();
  before(async () => {
    cluster = await startPostgres();
  });
  after(async () => {
    await cluster?.cleanup();
  });
  storeContract(async (name) => {
    let url = created.get(name);
    if (!url) {
      url = cluster.createDatabase(name.toLowerCase());
      created.set(name, url);
    }
    const stores = await openStores(
      { url: await url },
      {
        dataDir: '/nonexistent',
        logger: silentLogger(),
        serverId: `srv_${name}_${created.size}`,
        env: { PADDOCK_STORE_PASSWORD: cluster.password },
      },
    );
    return { stores, cleanup: () => stores.close() };
  });
});
