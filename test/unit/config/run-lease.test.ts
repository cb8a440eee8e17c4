import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { agentsConfigSchema } from '../../../src/config/agents-schema.js';

describe('agents.runLease', () => {
  it('defaults to a minute, renewed every 15 seconds', () => {
    assert.deepEqual(agentsConfigSchema.parse({}).runLease, { ttlMs: 60_000, renewEveryMs: 15_000 });
  });

  it('refuses a renewal interval over half the lease, naming why', () => {
    const r = agentsConfigSchema.safeParse({ runLease: { ttlMs: 2_000, renewEveryMs: 1_500 } });
    assert.equal(r.success, false);
    assert.match(r.error?.issues[0]?.message ?? '', /at most half of ttlMs/);
    assert.equal(
      agentsConfigSchema.safeParse({ runLease: { ttlMs: 2_000, renewEveryMs: 1_000 } }).success,
      true,
    );
  });
});
