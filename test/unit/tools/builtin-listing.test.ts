/**
 * The listing of every built-in tool (what `tools/list` returns for it: name, title,
 * description, inputSchema, outputSchema, annotations) is a contract with every client that
 * cached it or a model that learned it. This test compares it byte for byte with a committed
 * snapshot, so any change to a schema, its key order or a description is deliberate.
 * Regenerate after an intended change with `PADDOCK_UPDATE_FIXTURES=1`.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { BwrapBackend } from '../../../src/computer/backend/bwrap/backend.js';
import { ComputerManager } from '../../../src/computer/manager.js';
import { createComputerBuiltins } from '../../../src/computer/tools/computer-builtins.js';
import { createComputerTools } from '../../../src/computer/tools/index.js';
import { computerSchema } from '../../../src/config/computer-schema.js';
import { notifySchema } from '../../../src/config/notify-schema.js';
import { silentLogger } from '../../../src/shared/logger.js';
import { openDatabase } from '../../../src/store/sqlite/database.js';
import { SqliteMemoryStore } from '../../../src/store/sqlite/memory-store.js';
import { createBuiltinTools } from '../../../src/tools/builtin/index.js';
import { describeTool } from '../../../src/tools/describe.js';
import type { Tool } from '../../../src/tools/tool.js';

/** The committed snapshots, in the source tree (this file runs from dist/). */
const FIXTURES = fileURLToPath(new URL('../../../../test/fixtures/', import.meta.url));
const LISTING = join(FIXTURES, 'builtin-listing.json');
const MEMBERSHIP = join(FIXTURES, 'builtin-toolsets.json');

/**
 * Compares `value` with the snapshot at `file` as serialized JSON, byte for byte: key order and
 * every character of every description count (the file's own layout does not). Rewrites the
 * snapshot when asked to.
 */
function assertSnapshot(file: string, value: unknown): void {
  if (process.env.PADDOCK_UPDATE_FIXTURES === '1') writeFileSync(file, `${JSON.stringify(value, null, 2)}\n`);
  const expected = JSON.stringify(JSON.parse(readFileSync(file, 'utf8')));
  assert.equal(JSON.stringify(value), expected);
}

describe('built-in tool listing', () => {
  let dir: string;
  let db: ReturnType<typeof openDatabase>;
  let manager: ComputerManager;
  let tools: Tool[];

  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'paddock-listing-'));
    db = openDatabase(join(dir, 'memory.db'));
    const logger = silentLogger();
    manager = new ComputerManager({
      backend: new BwrapBackend({ logger, useCgroups: false }),
      config: computerSchema.parse({}),
      dataDir: dir,
      dockUrl: 'http://x',
      logger,
    });
    // the same tools, in the same order, as the composition root registers them
    tools = [
      ...createBuiltinTools({
        memory: new SqliteMemoryStore(db),
        notify: notifySchema.parse({}),
        logger,
      }),
      ...createComputerTools(manager),
      ...createComputerBuiltins(manager),
    ];
  });
  after(async () => {
    await manager.close();
    db.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('lists every built-in tool exactly as the committed snapshot, byte for byte', () => {
    assertSnapshot(LISTING, tools.map(describeTool));
  });

  it('keeps every built-in tool in the same source and tool sets', () => {
    assertSnapshot(
      MEMBERSHIP,
      tools.map((t) => ({ name: t.name, source: t.source, toolsets: t.toolsets })),
    );
  });
});
