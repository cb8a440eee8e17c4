/**
 * Memory namespaces by principal: each OAuth client has its own, the owner keeps `mcp`, a
 * command's tool-channel calls share their starter's, and two principals share only when
 * `principals.memory` says so.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { policySchema } from '../../../src/config/schema.js';
import { createWhitelistSandbox } from '../../../src/policy/index.js';
import type { Principal } from '../../../src/shared/principal.js';
import { openDatabase } from '../../../src/store/sqlite/database.js';
import { SqliteMemoryStore } from '../../../src/store/sqlite/memory-store.js';
import { createMemoryTools } from '../../../src/tools/builtin/index.js';
import { defaultNamespaceOf, explicitNamespaces } from '../../../src/tools/builtin/save-memory.js';
import { createHarness, type Harness, structured } from './harness.js';

const client = (id: string): Principal => ({ kind: 'client', id, name: id, computers: [] });

describe('memory namespaces by principal', () => {
  let h: Harness;
  let db: ReturnType<typeof openDatabase>;

  before(async () => {
    h = await createHarness(createWhitelistSandbox(policySchema.parse({})), (dir) => {
      db = openDatabase(join(dir, 'memory.db'));
      return createMemoryTools({
        store: new SqliteMemoryStore(db),
        namespaceOf: explicitNamespaces({ 'client:cl_shared': 'mcp' }, defaultNamespaceOf),
      });
    });
  });
  after(async () => {
    db.close();
    await h.close();
  });

  const recall = async (query: string, who: Partial<Parameters<Harness['call']>[2]>) =>
    structured((await h.call('recall_memory', { query }, who)).outcome) as {
      namespace: string;
      count: number;
    };

  it('keeps each client apart from the owner and from other clients', async () => {
    await h.call('save_memory', { content: 'owner deploy notes' }, { caller: 'mcp:s1' });
    const a = { caller: 'mcp:cl_a:s1', principal: client('cl_a') };
    await h.call('save_memory', { content: 'client a deploy notes' }, a);
    const mine = await recall('deploy', a);
    assert.equal(mine.namespace, 'client:cl_a');
    assert.equal(mine.count, 1);
    assert.equal((await recall('deploy', { caller: 'mcp:cl_b:s1', principal: client('cl_b') })).count, 0);
    const owner = await recall('deploy', { caller: 'mcp:s9' });
    assert.equal(owner.namespace, 'mcp');
    assert.equal(owner.count, 1, 'the owner sees only its own note');
    const channel = await recall('deploy', {
      caller: 'channel:g1.job1',
      onBehalfOf: 'mcp:cl_a:s1',
      via: 'channel',
      attended: false,
      principal: client('cl_a'),
    });
    assert.equal(channel.count, 1, 'a script started by the client shares its notes');
  });

  it('shares only what principals.memory names: a client mapped to mcp sees the owner’s notes', async () => {
    const shared = await recall('deploy', { caller: 'mcp:cl_shared:s1', principal: client('cl_shared') });
    assert.equal(shared.namespace, 'mcp');
    assert.equal(shared.count, 1);
  });
});
