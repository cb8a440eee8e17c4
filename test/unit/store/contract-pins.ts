/** The tool pin store's guarantees, for every implementation. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { ToolPin } from '../../../src/store/tool-pins.js';
import { type StoreFactory, withStores } from './fixtures.js';

const pin = (tool: string, hash: string, extra: Partial<ToolPin> = {}): ToolPin => ({
  server: 'linear',
  tool,
  decision: 'pinned',
  hash,
  definition: `{"name":"${tool}","v":"${hash}"}`,
  decidedAt: 1_700_000_000_000,
  decidedBy: 'first-sight',
  ...extra,
});

export function pinsContract(factory: StoreFactory): void {
  describe('tool pin store', () => {
    it('pins a first sight once: a second server that saw a different list keeps the first pins', () =>
      withStores(factory, 2, async (a, b) => {
        const [first, second] = await Promise.all([
          a.toolPins.pinFirstSight('linear', [pin('list_issues', 'a1'), pin('get_issue', 'a2')]),
          b.toolPins.pinFirstSight('linear', [pin('list_issues', 'b1'), pin('delete_issue', 'b3')]),
        ]);
        assert.equal(Number(first) + Number(second), 1, 'exactly one first sight is stored');
        const stored = await b.toolPins.list('linear');
        const hashes = stored.map((p) => p.hash).join(',');
        assert.ok(hashes === 'a2,a1' || hashes === 'b3,b1', hashes);
        assert.deepEqual(await a.toolPins.list('other'), []);
      }));

    it('applies a review as one change that every server reads: a new pin, a rejection, a dropped pin', () =>
      withStores(factory, 2, async (a, b) => {
        await a.toolPins.pinFirstSight('linear', [pin('list_issues', 'h1'), pin('get_issue', 'h2')]);
        await b.toolPins.apply([
          { op: 'set', pin: pin('list_issues', 'h1b', { decidedBy: 'cli', decidedAt: 5 }) },
          { op: 'set', pin: pin('get_issue', 'bad', { decision: 'rejected', decidedBy: 'dock:owner' }) },
          { op: 'delete', server: 'linear', tool: 'nothing_here', decision: 'pinned' },
        ]);
        const seen = await a.toolPins.list('linear');
        assert.deepEqual(
          seen.map((p) => [p.tool, p.decision, p.hash, p.decidedBy]),
          [
            ['get_issue', 'pinned', 'h2', 'first-sight'],
            ['get_issue', 'rejected', 'bad', 'dock:owner'],
            ['list_issues', 'pinned', 'h1b', 'cli'],
          ],
        );
        assert.equal(seen[2]!.decidedAt, 5);
        await a.toolPins.apply([{ op: 'delete', server: 'linear', tool: 'get_issue', decision: 'pinned' }]);
        assert.deepEqual(
          (await b.toolPins.list('linear')).map((p) => `${p.tool}/${p.decision}`),
          ['get_issue/rejected', 'list_issues/pinned'],
        );
      }));
  });
}
