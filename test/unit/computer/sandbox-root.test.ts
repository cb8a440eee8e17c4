import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { BwrapBackend } from '../../../src/computer/backend/bwrap/backend.js';
import { silentLogger } from '../../../src/shared/logger.js';

/** The pid of a process that has exited (and was reaped). */
function deadPid(): number {
  const r = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))']);
  return Number(r.stdout.toString());
}

describe('workspaces of crashed servers', () => {
  it('a starting server removes the sandbox directories of dead servers from the temp directory, and only those', async () => {
    const dead = join(tmpdir(), `paddock-sandboxes-${deadPid()}-dead01`);
    const mine = join(tmpdir(), `paddock-sandboxes-${process.pid}-live01`);
    const other = join(tmpdir(), 'paddock-sandboxes-not-a-server');
    try {
      for (const dir of [dead, mine, other]) {
        mkdirSync(join(dir, 'g1', 'workspace'), { recursive: true });
        writeFileSync(join(dir, 'g1', 'workspace', 'note.txt'), 'left behind');
      }
      const backend = new BwrapBackend({ logger: silentLogger() });
      await backend.dispose();
      assert.equal(existsSync(dead), false, 'the dead server’s workspaces are gone');
      assert.equal(existsSync(mine), true, 'a running server’s directory stays');
      assert.equal(existsSync(other), true, 'a directory without a server pid stays');
    } finally {
      for (const dir of [dead, mine, other]) rmSync(dir, { recursive: true, force: true });
    }
  });
});
