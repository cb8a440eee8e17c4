import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { IdempotencyCache } from '../../../src/computer/idempotency.js';
import { ComputerLog } from '../../../src/computer/logs.js';
import { checkGuestPath } from '../../../src/computer/paths.js';
import { ProfileCatalog } from '../../../src/computer/profiles.js';
import { isPaddockError } from '../../../src/shared/errors.js';
import { silentLogger } from '../../../src/shared/logger.js';

const code = (e: unknown) => (isPaddockError(e) ? e.code : String(e));

describe('guest path rules', () => {
  it('accepts absolute clean paths and rejects relative, dot, empty-segment, NUL and backslash paths', () => {
    for (const ok of ['/', '/workspace', '/workspace/a b/c.txt', '/tmp/.hidden', '/a/..b'])
      assert.equal(checkGuestPath(ok), ok);
    for (const bad of [
      '',
      'workspace',
      './x',
      '/a/./b',
      '/a/../b',
      '/a//b',
      '/a/',
      '/a\0b',
      '/a\\b',
      `/${'x'.repeat(1100)}`,
    ]) {
      assert.throws(
        () => checkGuestPath(bad),
        (e) => code(e) === 'INVALID_ARGUMENT',
        JSON.stringify(bad),
      );
    }
  });
});

describe('requestId idempotency', () => {
  it('runs the effect once per key and replays its outcome for the same arguments', async () => {
    const cache = new IdempotencyCache();
    let effects = 0;
    const effect = async () => ++effects;
    assert.equal(await cache.run('run_command', 'k1', { script: 'x', requestId: 'k1' }, effect), 1);
    assert.equal(await cache.run('run_command', 'k1', { requestId: 'k1', script: 'x' }, effect), 1);
    assert.equal(effects, 1);
    await assert.rejects(
      cache.run('run_command', 'k1', { script: 'y', requestId: 'k1' }, effect),
      (e) => code(e) === 'IDEMPOTENCY_CONFLICT',
    );
    assert.equal(
      await cache.run('launch_computer', 'k1', { profileId: 'shell' }, effect),
      2,
      'keys are scoped per tool',
    );
    assert.equal(await cache.run('run_command', undefined, { script: 'x' }, effect), 3);
  });

  it('replays a failure too, without a second attempt', async () => {
    const cache = new IdempotencyCache();
    let attempts = 0;
    const failing = async () => {
      attempts++;
      throw new Error('boom');
    };
    await assert.rejects(cache.run('t', 'k', {}, failing), /boom/);
    await assert.rejects(cache.run('t', 'k', {}, failing), /boom/);
    assert.equal(attempts, 1);
  });

  it('forgets the oldest keys beyond its capacity', async () => {
    const cache = new IdempotencyCache(2);
    let n = 0;
    const effect = async () => ++n;
    await cache.run('t', 'a', {}, effect);
    await cache.run('t', 'b', {}, effect);
    await cache.run('t', 'c', {}, effect);
    assert.equal(await cache.run('t', 'a', {}, effect), 4);
  });
});

describe('computer log', () => {
  it('pages by cursor, filters by level and answers OUTPUT_EXPIRED behind the ring', () => {
    let now = 1000;
    const log = new ComputerLog(silentLogger(), 5, () => now);
    for (let i = 1; i <= 3; i++) {
      now += 10;
      log.add(i === 2 ? 'err' : 'info', 'job.start', `entry ${i}`, { generation: 1 });
    }
    const page = log.read({ limit: 2 });
    assert.deepEqual(
      page.entries.map((e) => e.message),
      ['entry 1', 'entry 2'],
    );
    assert.equal(page.entries[0]!.sinceBootMs, 10);
    assert.deepEqual(
      log.read({ cursor: page.nextCursor, limit: 10 }).entries.map((e) => e.message),
      ['entry 3'],
    );
    assert.deepEqual(
      log.read({ limit: 10, level: 'err' }).entries.map((e) => e.message),
      ['entry 2'],
    );
    const stale = page.nextCursor;
    for (let i = 4; i <= 12; i++) log.add('info', 'job.start', `entry ${i}`);
    let caught: unknown;
    try {
      log.read({ cursor: stale, limit: 10 });
    } catch (e) {
      caught = e;
    }
    assert.equal(code(caught), 'OUTPUT_EXPIRED');
    const oldest = (caught as { details: { oldestCursor: string } }).details.oldestCursor;
    assert.deepEqual(
      log.read({ cursor: oldest, limit: 1 }).entries.map((e) => e.message),
      ['entry 8'],
    );
    assert.throws(
      () => log.read({ cursor: 'nope', limit: 1 }),
      (e) => code(e) === 'INVALID_ARGUMENT',
    );
  });
});

describe('profile catalogue', () => {
  it('computes availability from the programs a profile needs and searches names and descriptions case-insensitively', () => {
    const catalog = new ProfileCatalog(
      [
        {
          id: 'rusty',
          name: 'Rust Toolchain',
          description: 'Cargo and rustc.',
          mounts: [],
          env: {},
          limits: {} as never,
          networkMode: 'none',
          network: { mode: 'none' },
          user: 'guest',
          requires: ['cargo'],
          workspace: 'fresh',
          warm: 0,
        },
      ],
      (name) => name !== 'cargo',
    );
    const all = catalog.list();
    assert.deepEqual(
      all.map((p) => p.id),
      ['shell', 'node', 'python', 'rusty'],
    );
    assert.equal(all.find((p) => p.id === 'rusty')!.available, false);
    assert.match(all.find((p) => p.id === 'rusty')!.unavailableReason ?? '', /cargo/);
    assert.deepEqual(
      catalog.list('CARGO').map((p) => p.id),
      ['rusty'],
    );
    assert.deepEqual(
      catalog.list('javascript').map((p) => p.id),
      ['node'],
    );
    assert.throws(
      () => catalog.get('nope'),
      (e) => code(e) === 'NOT_FOUND' && /shell, node, python, rusty/.test((e as Error).message),
    );
  });
});
