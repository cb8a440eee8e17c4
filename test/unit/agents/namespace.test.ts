import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createAgentNamespaceOf } from '../../../src/agents/namespace.js';
import { policySchema } from '../../../src/config/schema.js';
import { createWhitelistSandbox } from '../../../src/policy/index.js';
import { openDatabase } from '../../../src/store/sqlite/database.js';
import { SqliteMemoryStore } from '../../../src/store/sqlite/memory-store.js';
import { SqliteAgentRunStore } from '../../../src/store/sqlite/run-store.js';
import { createMemoryTools } from '../../../src/tools/builtin/index.js';
import { createHarness } from '../builtin/harness.js';

describe('agent memory namespaces', () => {
  it('gives each agent its own memory, shared by all of its runs and hidden from other callers', async () => {
    let store: SqliteAgentRunStore | undefined;
    let memory: SqliteMemoryStore | undefined;
    const h = await createHarness(createWhitelistSandbox(policySchema.parse({})), (dir) => {
      const db = openDatabase(`${dir}/agents.db`);
      store = new SqliteAgentRunStore(db);
      memory = new SqliteMemoryStore(db);
      return createMemoryTools({ store: memory, namespaceOf: createAgentNamespaceOf(store) });
    });
    try {
      for (const [id, agent] of [
        ['run_1', 'digest'],
        ['run_2', 'digest'],
        ['run_3', 'triage'],
      ] as const) {
        await store!.start({ id, agent, trigger: 'manual', provider: 'p', model: 'm', skills: [] });
      }
      const asRun = (runId: string) => ({
        caller: `agent:${runId}`,
        via: 'agent' as const,
        attended: false,
        runId,
        parentId: runId,
      });
      const saved = await h.call('save_memory', { content: 'PR 41 waits since Monday' }, asRun('run_1'));
      assert.equal(saved.outcome.ok && saved.outcome.result.structured?.namespace, 'agent:digest');

      const recall = async (caller: Parameters<typeof h.call>[2]) => {
        const { outcome } = await h.call('recall_memory', { query: 'PR 41' }, caller);
        assert.ok(outcome.ok);
        return ((outcome.result.structured?.memories ?? []) as unknown[]).length;
      };
      assert.equal(await recall(asRun('run_2')), 1, 'a later run of the same agent finds it');
      assert.equal(await recall(asRun('run_3')), 0, 'another agent does not');
      assert.equal(
        await recall({ caller: 'mcp:s1', via: 'direct', attended: true }),
        0,
        'an MCP client does not',
      );
      // a tool-channel call of a job the run started carries the run id
      assert.equal(
        await recall({ caller: 'channel:g1.job1', via: 'channel', attended: false, runId: 'run_1' }),
        1,
      );
    } finally {
      await h.close();
    }
  });
});
