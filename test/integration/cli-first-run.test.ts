import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { REPO_ROOT, runCli, tempProject } from '../helpers/paddock-process.js';

/** Every `docs/<name>.md` a text names. */
function docsNamed(text: string): string[] {
  return [...new Set([...text.matchAll(/docs\/[\w.-]+\.md/g)].map((m) => m[0]))];
}

describe('the first commands a new user runs', () => {
  it('paddock init names only docs that exist, and docs/configuration.md covers every top-level key of the starter file', async () => {
    const p = tempProject();
    try {
      const r = await runCli(p, ['init']);
      assert.equal(r.code, 0, r.stderr);
      const written = readFileSync(join(p.dir, 'paddock.yaml'), 'utf8');
      const named = docsNamed(written + r.stdout);
      assert.ok(named.includes('docs/configuration.md'), named.join(', '));
      for (const doc of named) assert.ok(existsSync(join(REPO_ROOT, doc)), `${doc} is named but missing`);
      const reference = readFileSync(join(REPO_ROOT, 'docs', 'configuration.md'), 'utf8');
      const keys = [...written.matchAll(/^#?\s?([a-zA-Z]+):/gm)].map((m) => m[1]!);
      const topLevel = [...written.matchAll(/^([a-zA-Z]+):/gm)].map((m) => m[1]!);
      assert.ok(topLevel.length > 3, keys.join(','));
      for (const key of topLevel)
        assert.match(reference, new RegExp(`\`${key}\``), `docs/configuration.md lacks ${key}`);
    } finally {
      p.cleanup();
    }
  });

  it('paddock doctor lists only what serving needs; --dev adds the test and bench packages', async () => {
    const p = tempProject();
    try {
      const plain = await runCli(p, ['doctor', '--json']);
      const names = (JSON.parse(plain.stdout) as { name: string }[]).map((c) => c.name);
      assert.ok(names.includes('bubblewrap'), names.join(', '));
      for (const devOnly of ['chromium', 'jq', 'postgresql', 'ripgrep', 'socat']) {
        assert.ok(!names.includes(devOnly), `${devOnly} is listed for a user: ${names.join(', ')}`);
      }
      const dev = await runCli(p, ['doctor', '--dev', '--json']);
      const devNames = (JSON.parse(dev.stdout) as { name: string }[]).map((c) => c.name);
      for (const devOnly of ['chromium', 'jq', 'postgresql', 'ripgrep', 'socat']) {
        assert.ok(devNames.includes(devOnly), `${devOnly} is missing from --dev: ${devNames.join(', ')}`);
      }
    } finally {
      p.cleanup();
    }
  });
});
