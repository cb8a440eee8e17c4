import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { openDatabase } from '../../../src/store/sqlite/database.js';
import { SqliteMemoryStore } from '../../../src/store/sqlite/memory-store.js';
import { createMemoryTools } from '../../../src/tools/builtin/index.js';
import { defaultNamespaceOf } from '../../../src/tools/builtin/save-memory.js';
import { httpPolicy } from '../net/helpers.js';
import { createHarness, errorCode, type Harness, structured } from './harness.js';

interface Recalled {
  namespace: string;
  count: number;
  memories: { id: string; content: string; tags: string[]; score?: number }[];
}

describe('save_memory and recall_memory', () => {
  let h: Harness;
  let memoryDb: ReturnType<typeof openDatabase>;
  const agentNames: Record<string, string> = {
    'agent:run-1': 'digest',
    'agent:run-2': 'digest',
    'agent:run-3': 'triage',
  };

  before(async () => {
    h = await createHarness(httpPolicy([]), (dir) => {
      memoryDb = openDatabase(join(dir, 'memory.db'));
      return createMemoryTools({
        store: new SqliteMemoryStore(memoryDb),
        namespaceOf: (caller) =>
          caller.caller.startsWith('agent:')
            ? `agent:${agentNames[caller.caller] ?? 'unknown'}`
            : defaultNamespaceOf(caller),
      });
    });
  });
  after(async () => {
    memoryDb.close();
    await h.close();
  });

  const recall = async (query: string, caller: string, limit?: number) => {
    const input = limit === undefined ? { query } : { query, limit };
    return structured((await h.call('recall_memory', input, { caller })).outcome) as unknown as Recalled;
  };

  it('recalls a saved note, best match first', async () => {
    await h.call('save_memory', {
      content: 'The staging database lives on db-staging-2',
      tags: ['database'],
    });
    await h.call('save_memory', { content: 'Lunch is at noon' });
    const found = await recall('staging database', 'mcp:other-session');
    assert.equal(found.namespace, 'mcp');
    assert.equal(found.memories[0]?.content, 'The staging database lives on db-staging-2');
    assert.deepEqual(found.memories[0]?.tags, ['database']);
  });

  it('keeps namespaces apart: another agent or caller kind does not see the note', async () => {
    await h.call(
      'save_memory',
      { content: 'digest secret handshake is purple' },
      { caller: 'agent:run-1', via: 'agent' },
    );
    assert.equal(
      (await recall('purple handshake', 'agent:run-2')).count,
      1,
      'a later run of the same agent sees it',
    );
    assert.equal((await recall('purple handshake', 'agent:run-3')).count, 0);
    assert.equal((await recall('purple handshake', 'mcp:s1')).count, 0);
    assert.equal((await recall('purple handshake', 'cli')).count, 0);
  });

  it('returns five notes by default and honours a limit', async () => {
    for (let i = 0; i < 8; i++)
      await h.call('save_memory', { content: `release note ${i}` }, { caller: 'cli' });
    assert.equal((await recall('release', 'cli')).count, 5);
    assert.equal((await recall('release', 'cli', 7)).count, 7);
  });

  it('refuses a limit over 50, a note over 16 KiB and unknown properties', async () => {
    assert.equal(
      errorCode((await h.call('recall_memory', { query: 'x', limit: 51 })).outcome),
      'INVALID_ARGUMENT',
    );
    assert.equal(
      errorCode((await h.call('recall_memory', { query: 'x', limit: 0 })).outcome),
      'INVALID_ARGUMENT',
    );
    assert.equal(
      errorCode((await h.call('save_memory', { content: 'x'.repeat(16 * 1024 + 1) })).outcome),
      'INVALID_ARGUMENT',
    );
    // under 16 Ki characters but over 16 KiB of UTF-8
    const { outcome, row } = await h.call('save_memory', { content: 'é'.repeat(9000) });
    assert.equal(errorCode(outcome), 'LIMIT_EXCEEDED');
    assert.equal(row.success, false);
    assert.equal(
      errorCode((await h.call('save_memory', { content: 'x', pinned: true })).outcome),
      'INVALID_ARGUMENT',
    );
  });

  it('accepts FTS syntax in a query without failing or leaving the namespace', async () => {
    const found = await recall('"staging" AND * -db: OR NEAR(lunch', 'mcp:s1');
    const mine = new Set(['The staging database lives on db-staging-2', 'Lunch is at noon']);
    for (const m of found.memories) assert.ok(mine.has(m.content), m.content);
  });

  it('keeps notes across a reopen of the database', async () => {
    await h.call('save_memory', { content: 'persistent fact: the cake is real' }, { caller: 'dock:ana' });
    const reopened = openDatabase(join(h.dir, 'memory.db'));
    try {
      const again = await new SqliteMemoryStore(reopened).recall('dock', 'cake', 5);
      assert.equal(again[0]?.content, 'persistent fact: the cake is real');
    } finally {
      reopened.close();
    }
  });
});
