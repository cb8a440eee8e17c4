/**
 * `paddock tools list` with no server: without upstream servers or plugins it answers from
 * `<data>/run/tools-catalog.json` while the code and the configuration are unchanged, and
 * builds a Paddock again as soon as either changes.
 */
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { runCli, tempProject } from '../helpers/paddock-process.js';

type Row = { name: string; permission: string; description: string };

async function listJson(p: ReturnType<typeof tempProject>): Promise<Row[]> {
  const r = await runCli(p, ['tools', 'list', '--json']);
  assert.equal(r.code, 0, r.stderr);
  return JSON.parse(r.stdout) as Row[];
}

describe('tools list catalog (no server)', () => {
  it('prints what a fresh Paddock lists, from the catalog while nothing changed, anew after paddock.yaml changed', async () => {
    const p = tempProject();
    try {
      const catalog = join(p.dataDir, 'run', 'tools-catalog.json');
      const fresh = await listJson(p);
      assert.ok(fresh.some((t) => t.name === 'http_get' && t.permission === 'auto'));
      assert.ok(existsSync(catalog), 'the first listing keeps a catalog');
      assert.deepEqual(await listJson(p), fresh);

      // the listing printed is the catalog's while its key matches
      const kept = JSON.parse(readFileSync(catalog, 'utf8')) as { key: string; rows: Row[] };
      kept.rows = kept.rows.map((r) =>
        r.name === 'http_get' ? { ...r, description: 'kept in the catalog.' } : r,
      );
      writeFileSync(catalog, JSON.stringify(kept));
      const text = await runCli(p, ['tools', 'list']);
      assert.match(text.stdout, /^http_get\s+builtin\s+auto\s+kept in the catalog\.$/m);

      // a changed configuration is a new key: the Paddock is built again and its permissions apply
      writeFileSync(join(p.dir, 'paddock.yaml'), 'permissions:\n  http_get: deny\n  http_post: ask\n');
      const changed = await listJson(p);
      assert.ok(!changed.some((t) => t.name === 'http_get'), 'a denied tool is not listed');
      assert.equal(changed.find((t) => t.name === 'http_post')?.permission, 'ask');
      assert.equal(
        changed.find((t) => t.name === 'save_memory')?.description,
        fresh.find((t) => t.name === 'save_memory')?.description,
      );
    } finally {
      p.cleanup();
    }
  });

  it('keeps a catalog beside an mcp_servers.yaml that names no server, none once it names one', async () => {
    const p = tempProject();
    try {
      const catalog = join(p.dataDir, 'run', 'tools-catalog.json');
      mkdirSync(join(p.dir, '.paddock'), { recursive: true });
      writeFileSync(join(p.dir, '.paddock', 'mcp_servers.yaml'), 'mcpServers: {}\n');
      assert.ok((await listJson(p)).some((t) => t.name === 'read_file'));
      assert.ok(existsSync(catalog), 'no server named: the list is kept');
      rmSync(catalog);
      // a disabled server is never started, yet it makes the file one a catalog may not stand for
      writeFileSync(
        join(p.dir, '.paddock', 'mcp_servers.yaml'),
        'mcpServers:\n  off:\n    command: "false"\n    enabled: false\n',
      );
      assert.ok((await listJson(p)).some((t) => t.name === 'read_file'));
      assert.ok(!existsSync(catalog), 'a server named: every listing asks the built Paddock');
    } finally {
      p.cleanup();
    }
  });
});
