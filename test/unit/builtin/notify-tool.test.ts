import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { notifySchema } from '../../../src/config/notify-schema.js';
import { OWNER } from '../../../src/shared/principal.js';
import { openDatabase } from '../../../src/store/sqlite/database.js';
import { SqliteMemoryStore } from '../../../src/store/sqlite/memory-store.js';
import { createBuiltinTools } from '../../../src/tools/builtin/index.js';
import { httpPolicy, type LocalServer, startServer, staticResolver } from '../net/helpers.js';
import { createHarness, errorCode, type Harness, structured } from './harness.js';

describe('notify through the gateway (and the builtin factory)', () => {
  let hook: LocalServer;
  let h: Harness;
  let db: ReturnType<typeof openDatabase>;

  before(async () => {
    hook = await startServer((_req, res) => res.writeHead(204).end());
    h = await createHarness(httpPolicy([`localhost:${hook.port}`]), (dir) => {
      db = openDatabase(join(dir, 'memory.db'));
      return createBuiltinTools({
        memory: new SqliteMemoryStore(db),
        dns: staticResolver({ localhost: ['127.0.0.1'], 'hooks.example.net': ['127.0.0.1'] }),
        notify: notifySchema.parse({
          channels: {
            team: { type: 'webhook', url: `http://localhost:${hook.port}/team` },
            audit: { type: 'file', path: join(dir, 'notify.jsonl') },
            elsewhere: { type: 'slack', url: 'https://hooks.example.net/services/x' },
          },
        }),
      });
    });
  });
  after(async () => {
    db.close();
    await h.close();
    await hook.close();
  });

  it('offers the five builtins and names the channels in the notify schema', () => {
    const tools = h.gateway.listTools({ principal: OWNER, caller: 'cli', via: 'direct', attended: true });
    assert.deepEqual(
      tools.map((t) => t.name),
      ['http_get', 'http_post', 'save_memory', 'recall_memory', 'notify'],
    );
    const notify = tools.find((t) => t.name === 'notify');
    assert.ok(notify);
    const schema = notify.inputSchema as { properties: { channel: { description: string } } };
    assert.match(schema.properties.channel.description, /audit, elsewhere, team/);
  });

  it('delivers to a local webhook and records the allowing rule', async () => {
    const { outcome, row } = await h.call('notify', { channel: 'team', message: 'deployed', title: 'CI' });
    assert.equal(structured(outcome).delivered, true);
    assert.equal(structured(outcome).status, 204);
    assert.deepEqual(JSON.parse(hook.seen.at(-1)?.body ?? '').message, 'deployed');
    assert.match(String(row.policyRule), new RegExp(`localhost:${hook.port}`));
  });

  it('appends to a JSONL file channel', async () => {
    const { outcome } = await h.call('notify', { channel: 'audit', message: 'line one', data: '{"k":"v"}' });
    assert.equal(structured(outcome).type, 'file');
    const line = JSON.parse((await readFile(join(h.dir, 'notify.jsonl'), 'utf8')).trim());
    assert.equal(line.message, 'line one');
    assert.deepEqual(line.data, { k: 'v' });
  });

  it('refuses data that is not the JSON text of an object, naming the problem, and delivers nothing', async () => {
    for (const data of ['{"k":', '[1,2]', 'null']) {
      const before = hook.seen.length;
      const { outcome, row } = await h.call('notify', { channel: 'team', message: 'x', data });
      assert.equal(errorCode(outcome), 'INVALID_ARGUMENT', data);
      assert.match(outcome.ok ? '' : outcome.error.message, /data/);
      assert.equal(row.success, false);
      assert.equal(hook.seen.length, before, 'no delivery');
    }
  });

  it('declares every builtin schema so that strict function calling accepts it: closed objects, one type each', () => {
    const problems: string[] = [];
    for (const tool of h.gateway.listTools({
      principal: OWNER,
      caller: 'cli',
      via: 'direct',
      attended: true,
    })) {
      strictProblems(tool.inputSchema, tool.name, problems);
    }
    assert.deepEqual(problems, []);
  });

  it('denies a webhook on a domain the policy does not allow, with an audit row success=0', async () => {
    const { outcome, row } = await h.call('notify', { channel: 'elsewhere', message: 'x' });
    assert.equal(errorCode(outcome), 'POLICY_DENIED');
    assert.equal(row.success, false);
  });

  it('answers NOT_FOUND listing the channels for a channel that is not configured', async () => {
    const { outcome, row } = await h.call('notify', { channel: 'pager', message: 'x' });
    assert.equal(errorCode(outcome), 'NOT_FOUND');
    assert.match(outcome.ok ? '' : outcome.error.message, /audit, elsewhere, team/);
    assert.equal(row.success, false);
  });
});

/**
 * What OpenAI's strict mode (and the Inspector's portability check) refuse: an object that is not
 * closed (no properties, or additionalProperties other than false), a type union, `not`.
 */
function strictProblems(schema: unknown, path: string, out: string[]): void {
  if (schema === null || typeof schema !== 'object') return;
  const s = schema as Record<string, unknown>;
  if (Array.isArray(s.type)) out.push(`${path}: type union ${JSON.stringify(s.type)}`);
  if (s.not !== undefined) out.push(`${path}: uses not`);
  if (s.type === 'object') {
    if (s.properties === undefined) out.push(`${path}: object without properties`);
    if (s.additionalProperties !== false) out.push(`${path}: open object`);
  }
  for (const [key, sub] of Object.entries((s.properties as Record<string, unknown>) ?? {})) {
    strictProblems(sub, `${path}.${key}`, out);
  }
  if (s.items !== undefined) strictProblems(s.items, `${path}[]`, out);
  for (const sub of (s.anyOf as unknown[] | undefined) ?? []) strictProblems(sub, `${path}|`, out);
}
