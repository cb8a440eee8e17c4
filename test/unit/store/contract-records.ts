/** The memory, launch link, approval and OAuth stores' guarantees, for every implementation. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { PaddockError } from '../../../src/shared/errors.js';
import { approvalRequest, type StoreFactory, withStores } from './fixtures.js';

const contents = (memories: { content: string }[]) => memories.map((m) => m.content);
const invalid = (argument?: string) => (e: unknown) =>
  e instanceof PaddockError &&
  e.code === 'INVALID_ARGUMENT' &&
  (argument === undefined || e.details.argument === argument);
const isCode = (code: string) => (e: unknown) => e instanceof PaddockError && e.code === code;

export function recordsContract(factory: StoreFactory): void {
  describe('memory store', () => {
    it('ranks the memory that matches the query best first, with a higher score, across servers', () =>
      withStores(factory, 2, async (a, b) => {
        await a.memory.save('agent:a', 'Lunch was pasta today.');
        await a.memory.save('agent:a', 'The staging database migration failed at step three.');
        await b.memory.save('agent:a', 'The database was restarted.');
        await b.memory.save('agent:a', 'Renewed the TLS certificate.');
        const found = await a.memory.recall('agent:a', 'database migration staging', 10);
        assert.deepEqual(contents(found), [
          'The staging database migration failed at step three.',
          'The database was restarted.',
        ]);
        assert.ok(found[0]!.score! > found[1]!.score!);
        assert.ok(found[1]!.score! > 0);
      }));

    it('weighs a word in a tag above the same word in the content', () =>
      withStores(factory, 1, async ({ memory }) => {
        await memory.save('n', 'The release notes are long and mention backups once.');
        const tagged = await memory.save('n', 'Weekly schedule for the team.', ['backups']);
        const found = await memory.recall('n', 'backups', 5);
        assert.deepEqual(found.map((m) => m.id)[0], tagged.id);
        assert.equal(found.length, 2);
      }));

    it('finds memories by tag and returns their tags, cleaned', () =>
      withStores(factory, 1, async ({ memory }) => {
        const saved = await memory.save('agent:a', 'Deploys happen on Tuesdays.', [
          ' ops ',
          'release',
          'ops',
          '',
        ]);
        assert.deepEqual(saved.tags, ['ops', 'release']);
        await memory.save('agent:a', 'Unrelated note about lunch.');
        const found = await memory.recall('agent:a', 'release', 5);
        assert.deepEqual(
          found.map((m) => m.id),
          [saved.id],
        );
        assert.deepEqual(found[0]!.tags, ['ops', 'release']);
        assert.equal(found[0]!.createdAt, saved.createdAt);
      }));

    it('never returns another namespace’s memories, even with a matching query', () =>
      withStores(factory, 1, async ({ memory }) => {
        await memory.save('agent:a', 'The deploy key lives in the vault.');
        await memory.save('agent:ab', 'The deploy key for ab lives elsewhere.');
        await memory.save('agent', 'The deploy key of the parent namespace.');
        assert.deepEqual(contents(await memory.recall('agent:a', 'deploy key', 10)), [
          'The deploy key lives in the vault.',
        ]);
        assert.deepEqual(contents(await memory.recall('agent:a', '', 10)), [
          'The deploy key lives in the vault.',
        ]);
        assert.deepEqual(await memory.recall("agent:a' OR '1'='1", 'deploy', 10), []);
        assert.deepEqual(await memory.recall('agent:c', 'deploy', 10), []);
      }));

    it('searches query syntax as plain words, without errors', () =>
      withStores(factory, 1, async ({ memory }) => {
        await memory.save('n', 'alpha beta gamma');
        await memory.save('n', 'delta epsilon');
        const queries = ['"', '""', '"alpha', '*', 'alpha*beta', 'AND', 'alpha AND', 'OR OR', 'NOT alpha'];
        queries.push('NEAR(alpha beta)', '-', '-alpha', ':', 'content:alpha', 'tags:x', '(', ')', '^alpha');
        queries.push(
          '{content}: alpha',
          "alpha' OR 1=1 --",
          '+',
          '🦄',
          '   ',
          'alpha & !beta | gamma',
          'a:*',
        );
        for (const q of queries) await memory.recall('n', q, 10);
        assert.deepEqual(contents(await memory.recall('n', '-alpha', 10)), ['alpha beta gamma']);
        assert.deepEqual(contents(await memory.recall('n', 'alpha AND zzz', 10)), ['alpha beta gamma']);
        assert.deepEqual(contents(await memory.recall('n', 'NOT alpha', 10)), ['alpha beta gamma']);
      }));

    it('returns the most recent memories first for an empty or wordless query, without score', () =>
      withStores(factory, 1, async ({ memory }) => {
        for (const text of ['first', 'second', 'third', 'fourth']) await memory.save('n', text);
        await memory.save('other', 'fifth, elsewhere');
        assert.deepEqual(contents(await memory.recall('n', '', 3)), ['fourth', 'third', 'second']);
        assert.deepEqual(contents(await memory.recall('n', ' " * - ', 2)), ['fourth', 'third']);
        assert.equal((await memory.recall('n', '', 3))[0]!.score, undefined);
        for (let i = 0; i < 20; i++) await memory.save('n', `note ${i} about backups`);
        assert.equal((await memory.recall('n', 'backups', 7)).length, 7);
      }));

    it('rejects empty or oversized input with a clear INVALID_ARGUMENT', () =>
      withStores(factory, 1, async ({ memory }) => {
        await assert.rejects(memory.save('', 'text'), invalid('namespace'));
        await assert.rejects(memory.save('n', '   '), invalid('content'));
        await assert.rejects(memory.save('n', 'x'.repeat(64 * 1024 + 1)), invalid('content'));
        const many = Array.from({ length: 33 }, (_, i) => `t${i}`);
        await assert.rejects(memory.save('n', 'x', many), invalid('tags'));
        await assert.rejects(memory.save('n', 'x', ['t'.repeat(65)]), invalid('tags'));
        for (const limit of [0, 1001, 2.5])
          await assert.rejects(memory.recall('n', 'x', limit), invalid('limit'));
      }));
  });

  describe('launch link store', () => {
    it('opens a link on every server of the store, exactly as created', () =>
      withStores(factory, 2, async (a, b) => {
        const script = `#!/bin/sh\necho "é ${'x'.repeat(100_000)}"\n`;
        const link = await a.launchLinks.create('python', script);
        assert.match(link.id, /^[A-Za-z0-9_-]{8,64}$/);
        assert.deepEqual(await b.launchLinks.get(link.id), link);
        const bare = await b.launchLinks.create('shell', '');
        assert.equal((await a.launchLinks.get(bare.id)).startupScript, '');
      }));

    it('refuses a malformed id, an unknown one and a script over 2 MiB, each with its code', () =>
      withStores(factory, 1, async ({ launchLinks }) => {
        await assert.rejects(launchLinks.get('../etc'), isCode('INVALID_ARGUMENT'));
        await assert.rejects(launchLinks.get('abcdefghijkl'), isCode('NOT_FOUND'));
        await assert.rejects(
          launchLinks.create('shell', 'x'.repeat(2 * 1024 * 1024 + 1)),
          isCode('INVALID_ARGUMENT'),
        );
      }));
  });

  describe('approval store', () => {
    it('records a pending approval and lets exactly one of racing decisions end it', () =>
      withStores(factory, 2, async (a, b) => {
        const request = approvalRequest();
        const pending = await a.approvals.insert(request);
        assert.equal(pending.status, 'pending');
        assert.equal(pending.decidedAt, null);
        assert.equal(await b.approvals.ownerPid(request.id), process.pid);
        assert.equal(await b.approvals.pendingCount(request.caller), 1);
        const end = (status: 'approved' | 'denied', by: string) => ({
          status,
          by,
          via: 'dock' as const,
          reason: status === 'denied' ? 'r'.repeat(3000) : null,
          scope: status === 'approved' ? ('once' as const) : null,
          at: 5000,
        });
        const results = await Promise.all([
          a.approvals.end(request.id, end('approved', 'dock:owner')),
          b.approvals.end(request.id, end('denied', 'cli')),
        ]);
        const winners = results.filter((r) => r !== undefined);
        assert.equal(winners.length, 1);
        const decided = (await b.approvals.get(request.id))!;
        assert.deepEqual(decided, winners[0]);
        assert.ok(decided.status === 'approved' || (decided.reason?.length ?? 0) <= 2000);
        assert.equal(decided.decidedAt, 5000);
        assert.equal(await a.approvals.pendingCount(request.caller), 0);
        assert.equal(await a.approvals.get('apr_none'), undefined);
      }));

    it('lists newest first, pending only when asked, and marks orphans of gone processes interrupted', () =>
      withStores(factory, 1, async ({ approvals }) => {
        const first = await approvals.insert(approvalRequest());
        const second = await approvals.insert(approvalRequest());
        await approvals.end(first.id, {
          status: 'expired',
          by: null,
          via: 'server',
          reason: null,
          scope: null,
          at: 1,
        });
        assert.deepEqual(
          (await approvals.list()).map((x) => x.id),
          [second.id, first.id],
        );
        assert.deepEqual(
          (await approvals.list({ pendingOnly: true })).map((x) => x.id),
          [second.id],
        );
        assert.deepEqual(await approvals.interruptOrphans(2, () => true), [], 'its own process is alive');
        assert.equal((await approvals.get(second.id))?.status, 'pending');
      }));

    it('keeps one active rule per agent and tool, removes it once, and lists removed ones on request', () =>
      withStores(factory, 2, async (a, b) => {
        const rule = await a.approvals.addRule('digest', 'deploy', 'dock:owner', 'apr_1', 100);
        const again = await b.approvals.addRule('digest', 'deploy', 'cli', null, 200);
        assert.deepEqual(again, rule, 'an active rule is kept as it is');
        assert.deepEqual(await b.approvals.activeRule('digest', 'deploy'), rule);
        assert.equal(await b.approvals.activeRule('digest', 'other'), undefined);
        assert.deepEqual(
          (await b.approvals.rules()).map((r) => r.id),
          [rule.id],
        );
        const removed = await b.approvals.removeRule(rule.id, 'cli', 300);
        assert.equal(removed.removedAt, 300);
        assert.equal(removed.removedBy, 'cli');
        await assert.rejects(a.approvals.removeRule(rule.id, 'cli', 400), isCode('NOT_FOUND'));
        assert.deepEqual(await a.approvals.rules(), []);
        assert.deepEqual(
          (await a.approvals.rules(true)).map((r) => r.id),
          [rule.id],
        );
        const renewed = await a.approvals.addRule('digest', 'deploy', 'cli', null, 500);
        assert.notEqual(renewed.id, rule.id);
        assert.deepEqual(await a.approvals.rule(rule.id), removed);
      }));
  });

  describe('OAuth store', () => {
    it('lets exactly one of racing consumers on two servers use a code, and knows secrets by kind', () =>
      withStores(factory, 2, async (a, b) => {
        const client = await a.oauth.saveClient({ name: 'c', redirectUris: ['https://a.example/cb'] });
        assert.deepEqual(await b.oauth.clientByClientId(client.clientId), client);
        const grant = await a.oauth.createGrant(client, ['tools', 'computer'], 'http://127.0.0.1/mcp');
        assert.deepEqual(grant.scopes, ['tools', 'computer']);
        const { secret } = await a.oauth.issue(grant.id, 'code', 60_000, {
          redirectUri: 'https://a.example/cb',
          codeChallenge: 'x',
        });
        const found = (await b.oauth.find(secret, 'code'))!;
        assert.equal(found.redirectUri, 'https://a.example/cb');
        assert.equal(found.grant.id, grant.id);
        const wins = await Promise.all(
          Array.from({ length: 10 }, (_, i) => (i % 2 ? a : b).oauth.consume(found.digest)),
        );
        assert.equal(wins.filter(Boolean).length, 1);
        assert.equal(await a.oauth.find(secret, 'access'), null, 'a code is not an access token');
        assert.equal(await a.oauth.find('', 'code'), null);
      }));

    it('keeps a metadata-document client under its URL and refreshes its name', () =>
      withStores(factory, 1, async ({ oauth }) => {
        const url = 'https://client.example/meta.json';
        const first = await oauth.saveClient({
          name: 'One',
          redirectUris: ['https://a.example/cb'],
          metadataUrl: url,
        });
        const second = await oauth.saveClient({
          name: 'Two',
          redirectUris: ['https://b.example/cb'],
          metadataUrl: url,
        });
        assert.equal(second.id, first.id);
        assert.equal(second.clientId, url);
        assert.equal(second.name, 'Two');
        assert.deepEqual(second.redirectUris, ['https://b.example/cb']);
      }));

    it('revokes every grant and secret of a client, seen by every server', () =>
      withStores(factory, 2, async (a, b) => {
        const client = await a.oauth.saveClient({ name: 'r', redirectUris: ['https://a.example/cb'] });
        const grant = await a.oauth.createGrant(client, ['computer'], 'r');
        const other = await a.oauth.createGrant(client, ['tools'], 'r');
        const access = (await a.oauth.issue(grant.id, 'access', 60_000)).secret;
        assert.deepEqual((await b.oauth.liveGrants()).map((g) => g.id).sort(), [grant.id, other.id].sort());
        await a.oauth.touch(grant.id);
        assert.notEqual((await b.oauth.grant(grant.id))?.lastUsedAt, null);
        assert.deepEqual((await b.oauth.revokeClient(client.clientId)).sort(), [grant.id, other.id].sort());
        assert.notEqual((await a.oauth.find(access, 'access'))?.usedAt, null);
        assert.deepEqual(await a.oauth.revokedAmong([grant.id, 'gr_gone']), [grant.id, 'gr_gone']);
        assert.deepEqual(await a.oauth.liveGrants(), []);
        assert.equal(await a.oauth.revokeGrant(grant.id), false, 'a revoked grant is not live');
        assert.equal(await a.oauth.setScopes(grant.id, ['tools']), null, 'a revoked grant keeps its scopes');
      }));

    it('changes the scopes of a live grant, seen by every server and by its tokens', () =>
      withStores(factory, 2, async (a, b) => {
        const client = await a.oauth.saveClient({ name: 's', redirectUris: ['https://a.example/cb'] });
        const grant = await a.oauth.createGrant(client, ['tools'], 'r');
        const access = (await a.oauth.issue(grant.id, 'access', 60_000)).secret;
        const changed = await b.oauth.setScopes(grant.id, ['tools', 'computer:review-box']);
        assert.deepEqual(changed?.scopes, ['tools', 'computer:review-box']);
        assert.deepEqual((await a.oauth.find(access, 'access'))?.grant.scopes, [
          'tools',
          'computer:review-box',
        ]);
        assert.equal(await a.oauth.setScopes('gr_gone', ['tools']), null);
      }));

    it('keeps at most the given number of clients that never got a grant, oldest dropped first', () =>
      withStores(factory, 1, async ({ oauth }) => {
        const kept = await oauth.saveClient({ name: 'granted', redirectUris: ['https://a.example/cb'] });
        await oauth.createGrant(kept, ['tools'], 'r');
        const ids: string[] = [];
        for (let i = 0; i < 5; i++) {
          ids.push(
            (await oauth.saveClient({ name: `n${i}`, redirectUris: ['https://a.example/cb'] })).clientId,
          );
          // registration times must differ for "oldest" to mean something
          const at = Date.now();
          while (Date.now() === at) await new Promise((r) => setImmediate(r));
        }
        assert.equal(await oauth.pruneUnusedClients(2), 3);
        const present = await Promise.all(ids.map(async (id) => (await oauth.clientByClientId(id)) !== null));
        assert.deepEqual(present, [false, false, false, true, true]);
        assert.ok(await oauth.clientByClientId(kept.clientId), 'a client with a grant stays');
      }));
  });
}
