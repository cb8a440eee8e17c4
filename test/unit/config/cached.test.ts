import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { loadConfigCached } from '../../../src/config/cached.js';
import { ConfigError, loadConfig } from '../../../src/config/load.js';

async function withDir<T>(fn: (dir: string, env: NodeJS.ProcessEnv) => Promise<T>): Promise<T> {
  const dir = mkdtempSync(join(tmpdir(), 'paddock-cfg-cache-'));
  try {
    return await fn(dir, { PADDOCK_DATA: join(dir, 'data') });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

describe('the validated-configuration cache', () => {
  it('answers exactly what loadConfig answers, on the first start and from the cache', () =>
    withDir(async (dir, env) => {
      writeFileSync(
        join(dir, 'paddock.yaml'),
        'server:\n  port: 4555\npolicy:\n  files:\n    read: [/data]\n',
      );
      const expected = loadConfig({ cwd: dir, env });
      assert.deepStrictEqual(await loadConfigCached({ cwd: dir, env }), expected);
      assert.ok(existsSync(join(dir, 'data', 'run', 'config-cache.json')), 'the first start keeps it');
      assert.deepStrictEqual(await loadConfigCached({ cwd: dir, env }), expected);
      assert.equal(expected.config.server.port, 4555);
    }));

  it('validates a changed file again, and reports it invalid although a valid one was cached', () =>
    withDir(async (dir, env) => {
      const file = join(dir, 'paddock.yaml');
      writeFileSync(file, 'server:\n  port: 4555\n');
      await loadConfigCached({ cwd: dir, env });
      writeFileSync(file, 'server:\n  port: 4556\n');
      assert.equal((await loadConfigCached({ cwd: dir, env })).config.server.port, 4556);
      writeFileSync(file, 'server:\n  port: "x"\n');
      for (let i = 0; i < 2; i++) {
        await assert.rejects(loadConfigCached({ cwd: dir, env }), (e: Error) => {
          assert.ok(e instanceof ConfigError);
          assert.match(e.problems.join('\n'), /^server\.port: /m);
          return true;
        });
      }
    }));

  it('keeps the defaults apart from a file, and reports a named file that is missing', () =>
    withDir(async (dir, env) => {
      assert.equal((await loadConfigCached({ cwd: dir, env })).file, undefined);
      writeFileSync(join(dir, 'paddock.yaml'), 'server:\n  port: 4557\n');
      const loaded = await loadConfigCached({ cwd: dir, env });
      assert.equal(loaded.file, join(dir, 'paddock.yaml'));
      assert.equal(loaded.config.server.port, 4557);
      await assert.rejects(loadConfigCached({ cwd: dir, env, configPath: 'nope.yaml' }), /not found/);
    }));
});
