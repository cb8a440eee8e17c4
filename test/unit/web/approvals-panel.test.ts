import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { ApprovalService } from '../../../src/approvals/service.js';
import { silentLogger } from '../../../src/shared/logger.js';
import { OWNER } from '../../../src/shared/principal.js';
import { SqliteApprovalStore } from '../../../src/store/sqlite/approval-store.js';
import { openDatabase } from '../../../src/store/sqlite/database.js';
import type { Tool } from '../../../src/tools/tool.js';
import { dockApprovalsFromService } from '../../../src/web/dock/approvals-adapter.js';
import { MAX_APPROVAL_ARGUMENTS_CHARS } from '../../../src/web/dock/protocol.js';
import { pollUntil } from '../../helpers/poll.js';

const tool: Tool = {
  name: 'post',
  description: 'Posts a message.',
  inputSchema: { type: 'object' },
  annotations: {},
  source: 'builtin',
  toolsets: ['builtin'],
  execute: async () => ({}),
};

describe('the dock approvals source', () => {
  it('sends the whole arguments, or says how long they are when it sends a part; a watching page counts as an open dock', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'paddock-approvals-panel-'));
    const db = openDatabase(join(dir, 'a.db'));
    const service = await ApprovalService.open({
      store: new SqliteApprovalStore(db),
      logger: silentLogger(),
      timeoutMs: 60_000,
      maxPendingPerCaller: 10,
      describe: () => 'Posts a message.',
    });
    try {
      const source = dockApprovalsFromService(service);
      assert.equal(service.dockOpen(), false);
      let changes = 0;
      const watch = source.onChange(() => changes++);
      assert.equal(service.dockOpen(), true);
      const caller = { principal: OWNER, caller: 'mcp:s1', via: 'direct' as const, attended: true };
      const small = service.admit({
        tool,
        input: { text: 'hi' },
        caller,
        invocationId: 'inv_1',
        rule: 'r',
        deadline: Date.now() + 60_000,
      });
      const big = 'x'.repeat(MAX_APPROVAL_ARGUMENTS_CHARS + 10);
      const large = service.admit({
        tool,
        input: { text: big },
        caller,
        invocationId: 'inv_2',
        rule: 'r',
        deadline: Date.now() + 60_000,
      });
      // each request is written before it is listed
      const pending = await pollUntil(async () => {
        const listed = (await source.state()).pending;
        return listed.length === 2 ? listed : undefined;
      }, 'both requests');
      const [first, second] = pending ?? [];
      assert.equal(first?.arguments, '{"text":"hi"}');
      assert.equal(first?.argumentsTruncated, false);
      assert.equal(first?.description, 'Posts a message.');
      assert.equal(second?.argumentsTruncated, true);
      assert.equal(second?.argumentsChars, big.length + '{"text":""}'.length);
      assert.equal(second?.arguments.length, MAX_APPROVAL_ARGUMENTS_CHARS);
      await source.decide(first!.id, { approve: true }, 'dock:owner');
      await source.decide(second!.id, { approve: false, reason: 'too big' }, 'dock:owner');
      assert.equal((await small).run, true);
      assert.equal((await large).run, false);
      assert.equal((await source.state()).pending.length, 0);
      assert.ok(changes >= 4, 'every request and decision is pushed');
      watch.dispose();
      assert.equal(service.dockOpen(), false);
    } finally {
      await service.close();
      db.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
