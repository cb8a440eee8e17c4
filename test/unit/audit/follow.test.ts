import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { followAudit } from '../../../src/audit/follow.js';
import type { StoredInvocation } from '../../../src/audit/types.js';
import { silentLogger } from '../../../src/shared/logger.js';
import { openSqliteStores } from '../../../src/store/sqlite/open.js';
import { pollUntil } from '../../helpers/poll.js';
import { invocation, started } from '../store/fixtures.js';

describe('following the audit log', () => {
  it('prints the matching rows another process writes, in the order they end, from where it started', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'paddock-follow-'));
    const file = join(dir, 'paddock.db');
    const follower = await openSqliteStores(file, { serverId: 'srv_f', logger: silentLogger() });
    const writer = await openSqliteStores(file, { serverId: 'srv_w', logger: silentLogger() });
    const stop = new AbortController();
    try {
      await writer.audit.record(invocation({ id: 'before', tool: 'http_get' }));
      const seen: StoredInvocation[] = [];
      const following = followAudit(
        follower.audit,
        { tool: 'http_get' },
        await follower.audit.lastEndSeq(),
        (row) => void seen.push(row),
        stop.signal,
        20,
      );
      await writer.audit.begin(started({ id: 'long', tool: 'http_get' }));
      await writer.audit.record(invocation({ id: 'other_tool', tool: 'read_file' }));
      await writer.audit.record(invocation({ id: 'short', tool: 'http_get', success: false }));
      await writer.audit.complete('long', { durationMs: 9, outputBytes: 1, success: true });
      await pollUntil(() => seen.length >= 2, 'both http_get rows');
      stop.abort();
      await following;
      assert.deepEqual(
        seen.map((r) => [r.id, r.state]),
        [
          ['short', 'ended'],
          ['long', 'ended'],
        ],
      );
    } finally {
      stop.abort();
      await follower.close();
      await writer.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
