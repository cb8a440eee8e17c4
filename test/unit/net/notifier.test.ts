import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { type NotifyConfig, notifySchema } from '../../../src/config/notify-schema.js';
import { createHttpClient } from '../../../src/net/http-client.js';
import { createNotifier, type Notifier } from '../../../src/net/notifier.js';
import type { Sandbox } from '../../../src/policy/types.js';
import { isPaddockError } from '../../../src/shared/errors.js';
import { createLogger } from '../../../src/shared/logger.js';
import { httpPolicy, type LocalServer, startServer, staticResolver } from './helpers.js';

describe('notifier', () => {
  let hook: LocalServer;
  let dir: string;
  let notifier: Notifier;
  let policy: Sandbox;
  const logLines: string[] = [];
  const sentAt = new Date('2030-01-02T03:04:05.000Z');

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'paddock-notify-'));
    hook = await startServer((req, res) => {
      if (req.url === '/fail') res.writeHead(500, { 'content-type': 'text/plain' }).end('upstream broke');
      else res.writeHead(200, { 'content-type': 'text/plain' }).end('ok');
    });
    const config: NotifyConfig = notifySchema.parse({
      channels: {
        ops: {
          type: 'webhook',
          url: `http://localhost:${hook.port}/hook`,
          headers: { Authorization: 'Bearer t0k' },
        },
        chat: { type: 'slack', url: `http://localhost:${hook.port}/slack` },
        broken: { type: 'webhook', url: `http://localhost:${hook.port}/fail` },
        outside: { type: 'webhook', url: 'https://hooks.example.net/x' },
        journal: { type: 'file', path: join(dir, 'nested', 'notify.jsonl') },
        server: { type: 'log' },
      },
    });
    notifier = createNotifier({
      config,
      http: createHttpClient({
        dns: staticResolver({ localhost: ['127.0.0.1'], 'hooks.example.net': ['127.0.0.1'] }),
      }),
      logger: createLogger({ json: true, write: (line) => logLines.push(line) }),
      now: () => sentAt,
    });
    policy = httpPolicy([`localhost:${hook.port}`]);
  });
  after(async () => {
    await hook.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('posts {title, message, data, sentAt} as JSON to a webhook with its configured headers', async () => {
    const receipt = await notifier.send(
      'ops',
      { title: 'Deploy', message: 'done', data: { build: 7 } },
      { policy },
    );
    assert.deepEqual(receipt, { channel: 'ops', type: 'webhook', sentAt: sentAt.toISOString(), status: 200 });
    const got = hook.seen.at(-1);
    assert.equal(got?.url, '/hook');
    assert.equal(got?.method, 'POST');
    assert.equal(got?.headers['content-type'], 'application/json');
    assert.equal(got?.headers.authorization, 'Bearer t0k');
    assert.deepEqual(JSON.parse(got?.body ?? ''), {
      title: 'Deploy',
      message: 'done',
      data: { build: 7 },
      sentAt: sentAt.toISOString(),
    });
  });

  it('posts {text} to a Slack incoming webhook', async () => {
    await notifier.send('chat', { title: 'Build', message: 'green' }, { policy });
    const got = hook.seen.at(-1);
    assert.equal(got?.url, '/slack');
    assert.deepEqual(JSON.parse(got?.body ?? ''), { text: '*Build*\ngreen' });
  });

  it('denies a webhook whose domain the policy does not allow, without contacting it', async () => {
    const seen = hook.seen.length;
    await assert.rejects(notifier.send('outside', { message: 'x' }, { policy }), (e: unknown) => {
      assert.ok(isPaddockError(e));
      assert.equal(e.code, 'POLICY_DENIED');
      return true;
    });
    assert.equal(hook.seen.length, seen);
  });

  it('fails with UPSTREAM_ERROR when the webhook answers with an error status', async () => {
    await assert.rejects(notifier.send('broken', { message: 'x' }, { policy }), (e: unknown) => {
      assert.ok(isPaddockError(e));
      assert.equal(e.code, 'UPSTREAM_ERROR');
      assert.match(e.message, /500/);
      return true;
    });
  });

  it('appends one JSON line per notification to a file created with mode 0600', async () => {
    const path = join(dir, 'nested', 'notify.jsonl');
    await notifier.send('journal', { message: 'first' }, { policy });
    await notifier.send('journal', { message: 'second', data: { n: 2 } }, { policy });
    const lines = (await readFile(path, 'utf8')).trimEnd().split('\n');
    assert.deepEqual(
      lines.map((l) => JSON.parse(l)),
      [
        { channel: 'journal', message: 'first', sentAt: sentAt.toISOString() },
        { channel: 'journal', message: 'second', data: { n: 2 }, sentAt: sentAt.toISOString() },
      ],
    );
    assert.equal((await stat(path)).mode & 0o777, 0o600);
  });

  it('writes a notify.sent event to the log channel', async () => {
    await notifier.send('server', { message: 'hello log' }, { policy });
    const event = logLines.map((l) => JSON.parse(l)).find((r) => r.event === 'notify.sent');
    assert.equal(event?.message, 'hello log');
    assert.equal(event?.channel, 'server');
  });

  it('names the configured channels when asked for an unknown one', async () => {
    await assert.rejects(notifier.send('nope', { message: 'x' }, { policy }), (e: unknown) => {
      assert.ok(isPaddockError(e));
      assert.equal(e.code, 'NOT_FOUND');
      assert.match(e.message, /broken, chat, journal, ops, outside, server/);
      return true;
    });
  });

  it('refuses a message over 16 KiB', async () => {
    await assert.rejects(notifier.send('server', { message: 'é'.repeat(9000) }, { policy }), (e: unknown) => {
      assert.ok(isPaddockError(e));
      assert.equal(e.code, 'LIMIT_EXCEEDED');
      return true;
    });
  });
});

describe('notify config', () => {
  const problems = (input: unknown) => {
    const result = notifySchema.safeParse(input);
    return result.success ? [] : result.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`);
  };

  it('accepts every channel type and defaults to no channels', () => {
    assert.deepEqual(notifySchema.parse({}), { channels: {} });
    assert.deepEqual(
      problems({
        channels: {
          a: { type: 'webhook', url: 'https://x.example.com/h' },
          b: { type: 'slack', url: 'https://hooks.example.com/s' },
          c: { type: 'file', path: '/var/log/paddock/notify.jsonl' },
          d: { type: 'log' },
        },
      }),
      [],
    );
  });

  it('rejects unknown keys, missing URLs, non-http URLs and relative paths', () => {
    assert.notDeepEqual(problems({ channels: { a: { type: 'log', url: 'https://x.example.com' } } }), []);
    assert.notDeepEqual(problems({ channels: { a: { type: 'webhook' } } }), []);
    assert.notDeepEqual(problems({ channels: { a: { type: 'webhook', url: 'file:///etc/passwd' } } }), []);
    assert.notDeepEqual(problems({ channels: { a: { type: 'file', path: 'notify.jsonl' } } }), []);
    assert.notDeepEqual(problems({ channels: { a: { type: 'file', path: '/tmp/../etc/x' } } }), []);
    assert.notDeepEqual(problems({ channels: { a: { type: 'email' } } }), []);
    assert.notDeepEqual(problems({ channels: { 'bad name!': { type: 'log' } } }), []);
    assert.notDeepEqual(problems({ channels: {}, extra: 1 }), []);
  });
});
