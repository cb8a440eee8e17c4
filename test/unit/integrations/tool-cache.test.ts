import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, test } from 'node:test';
import type { McpServerConfig } from '../../../src/integrations/load-config.js';
import { ToolListCache } from '../../../src/integrations/tool-cache.js';
import { silentLogger } from '../../../src/shared/logger.js';

const config: McpServerConfig = {
  name: 'github',
  prefix: 'github',
  transport: 'stdio',
  command: 'gh-mcp',
  args: ['--read-only'],
  env: { TOKEN: 'secret-value' },
  enabled: true,
  timeoutMs: 10_000,
  permissions: {},
  toolsets: [],
  startup: 'lazy',
};
const tools = [{ name: 'list_issues', description: 'Lists issues.', inputSchema: { type: 'object' } }];

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'paddock-cache-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

describe('ToolListCache', () => {
  test('keeps a tool list across instances, in a private file without the secrets of the config', () => {
    const file = join(dir, 'data', 'mcp-tools.json');
    new ToolListCache(file, silentLogger()).set(config, tools);
    assert.deepEqual(new ToolListCache(file, silentLogger()).get(config), tools);
    assert.equal(statSync(file).mode & 0o777, 0o600);
    assert.ok(!readFileSync(file, 'utf8').includes('secret-value'));
  });

  test('misses when the way the server is started changed', () => {
    const file = join(dir, 'c.json');
    const cache = new ToolListCache(file, silentLogger());
    cache.set(config, tools);
    assert.equal(cache.get({ ...config, args: ['--write'] }), undefined);
    assert.equal(cache.get({ ...config, env: { TOKEN: 'other' } }), undefined);
    assert.deepEqual(
      cache.get({ ...config, timeoutMs: 1 }),
      tools,
      'options that do not change the server keep the entry',
    );
  });

  test('treats an unreadable or foreign file as an empty cache', () => {
    const file = join(dir, 'c.json');
    writeFileSync(file, '{not json');
    assert.equal(new ToolListCache(file, silentLogger()).get(config), undefined);
    writeFileSync(file, JSON.stringify({ version: 99, servers: { github: { tools } } }));
    assert.equal(new ToolListCache(file, silentLogger()).get(config), undefined);
  });
});
