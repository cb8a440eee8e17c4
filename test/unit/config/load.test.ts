import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { ConfigError, loadConfig } from '../../../src/config/load.js';

function withDir<T>(fn: (dir: string) => T): T {
  const dir = mkdtempSync(join(tmpdir(), 'paddock-cfg-'));
  try {
    return fn(dir);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

describe('paddock.yaml loading', () => {
  it('uses the built-in defaults when no file exists', () =>
    withDir((dir) => {
      const loaded = loadConfig({ cwd: dir, env: { PADDOCK_DATA: join(dir, 'd') } });
      assert.equal(loaded.file, undefined);
      assert.equal(loaded.config.server.host, '127.0.0.1');
      assert.equal(loaded.dataDir, join(dir, 'd'));
    }));

  it('reports every problem as one path: message line, unknown keys included', () =>
    withDir((dir) => {
      writeFileSync(
        join(dir, 'paddock.yaml'),
        'server:\n  port: "x"\n  colour: red\npolicy:\n  files:\n    read: 3\nbogus: 1\n',
      );
      assert.throws(
        () => loadConfig({ cwd: dir, env: {} }),
        (e: ConfigError) => {
          assert.ok(e instanceof ConfigError);
          const text = e.problems.join('\n');
          assert.match(text, /^server\.port: /m);
          assert.match(text, /^server: unknown key "colour"/m);
          assert.match(text, /^policy\.files\.read: /m);
          assert.match(text, /^\(root\): unknown key "bogus"/m);
          return true;
        },
      );
    }));

  it('refuses a third party as its own decider and a memory entry that names no principal, each on its line', () =>
    withDir((dir) => {
      writeFileSync(
        join(dir, 'paddock.yaml'),
        'approvals:\n  deciders:\n    clients: [elicitation]\nprincipals:\n  clients:\n    maxSessions: 0\n  memory:\n    "client:cl_x": mcp\n    someone: mcp\n',
      );
      assert.throws(
        () => loadConfig({ cwd: dir, env: {} }),
        (e: ConfigError) => {
          const text = e.problems.join('\n');
          assert.match(text, /^approvals\.deciders\.clients\.0: .*would let a client approve itself/m);
          assert.match(text, /^principals\.clients\.maxSessions: /m);
          assert.match(text, /^principals\.memory\.someone: "someone" is not a principal/m);
          assert.doesNotMatch(text, /cl_x/);
          return true;
        },
      );
    }));

  it('reports a YAML syntax error with its line', () =>
    withDir((dir) => {
      writeFileSync(join(dir, 'paddock.yaml'), 'server:\n  port: [1,\n');
      assert.throws(
        () => loadConfig({ cwd: dir, env: {} }),
        (e: ConfigError) => /line \d+/.test(e.problems[0] ?? ''),
      );
    }));

  it('fails when a named file does not exist instead of falling back to defaults', () =>
    withDir((dir) => {
      assert.throws(() => loadConfig({ cwd: dir, env: { PADDOCK_CONFIG: 'missing.yaml' } }), ConfigError);
      assert.throws(() => loadConfig({ cwd: dir, configPath: 'other.yaml', env: {} }), ConfigError);
    }));

  it('refuses auth none on a non-loopback host', () =>
    withDir((dir) => {
      writeFileSync(join(dir, 'paddock.yaml'), 'server:\n  host: 0.0.0.0\n  auth: none\n');
      assert.throws(() => loadConfig({ cwd: dir, env: {} }), /loopback/);
    }));
});
