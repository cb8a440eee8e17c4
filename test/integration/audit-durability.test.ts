import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { SqliteAuditStore } from '../../src/store/sqlite/audit-store.js';
import { openDatabase } from '../../src/store/sqlite/database.js';

/** The compiled audit module, next to this compiled test in the output tree. */
const AUDIT_MODULE = new URL('../../src/audit/index.js', import.meta.url).href;

/** A child that opens the database, records `count` rows, prints "recorded" and waits forever. */
function recorderScript(): string {
  return `
import { openDatabase, SqliteAuditStore } from ${JSON.stringify(AUDIT_MODULE)};
const [file, prefix, count] = process.argv.slice(2);
const store = new SqliteAuditStore(openDatabase(file));
for (let i = 0; i < Number(count); i++) {
  await store.record({
    id: prefix + i, startedAt: Date.now(), durationMs: 1, tool: 'run_command', source: 'computer',
    caller: 'mcp:child', via: 'direct', input: { i, token: 'never-stored' }, outputBytes: 0, success: true,
  });
}
process.stdout.write('recorded\\n');
setInterval(() => {}, 60_000);
`;
}

interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

/** Resolves once the child prints `line`; rejects if it exits first or the deadline passes. */
function waitForLine(child: ChildProcess, line: string, timeoutMs: number): Promise<void> {
  return new Promise((resolve, reject) => {
    let out = '';
    let err = '';
    const timer = setTimeout(
      () => reject(new Error(`no "${line}" within ${timeoutMs} ms; stderr: ${err}`)),
      timeoutMs,
    );
    child.stderr?.on('data', (d: Buffer) => {
      err += d.toString();
    });
    child.stdout?.on('data', (d: Buffer) => {
      out += d.toString();
      if (out.includes(`${line}\n`)) {
        clearTimeout(timer);
        resolve();
      }
    });
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      reject(new Error(`child exited (code ${code}, signal ${signal}) before "${line}"; stderr: ${err}`));
    });
  });
}

function exited(child: ChildProcess): Promise<Exit> {
  if (child.exitCode !== null || child.signalCode !== null) {
    return Promise.resolve({ code: child.exitCode, signal: child.signalCode });
  }
  return new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
}

async function withWorkspace(fn: (dir: string, script: string) => Promise<void>): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'paddock-durability-'));
  const script = join(dir, 'recorder.mjs');
  writeFileSync(script, recorderScript());
  try {
    await fn(dir, script);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

function startRecorder(script: string, file: string, prefix: string, count: number): ChildProcess {
  return spawn(process.execPath, [script, file, prefix, String(count)], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
}

describe('audit durability', () => {
  it('keeps a row recorded just before the process is killed with SIGKILL', async () => {
    await withWorkspace(async (dir, script) => {
      const file = join(dir, 'data', 'paddock.db');
      const child = startRecorder(script, file, 'inv_killed_', 3);
      try {
        await waitForLine(child, 'recorded', 30_000);
        child.kill('SIGKILL');
        assert.deepEqual(await exited(child), { code: null, signal: 'SIGKILL' });
      } finally {
        child.kill('SIGKILL');
      }
      // The rows were never checkpointed by a clean close: they live only in the WAL.
      assert.ok(statSync(`${file}-wal`).size > 0, 'the WAL holds the uncheckpointed rows');
      const db = openDatabase(file);
      try {
        const store = new SqliteAuditStore(db);
        for (let i = 0; i < 3; i++) {
          const row = await store.get(`inv_killed_${i}`);
          assert.ok(row, `row ${i} survived`);
          assert.equal(row.input, `{"i":${i},"token":"[REDACTED]"}`);
        }
      } finally {
        db.close();
      }
    });
  });

  it('records every row when two processes write to a new database at once', async () => {
    await withWorkspace(async (dir, script) => {
      const file = join(dir, 'paddock.db');
      const children = [
        startRecorder(script, file, 'inv_a_', 500),
        startRecorder(script, file, 'inv_b_', 500),
      ];
      try {
        await Promise.all(children.map((c) => waitForLine(c, 'recorded', 60_000)));
      } finally {
        for (const c of children) c.kill('SIGKILL');
      }
      await Promise.all(children.map(exited));
      const db = openDatabase(file);
      try {
        const rows = await new SqliteAuditStore(db).query({ limit: 10_000 });
        assert.equal(rows.length, 1000);
        assert.equal(new Set(rows.map((r) => r.id)).size, 1000);
        assert.equal(rows.filter((r) => r.id.startsWith('inv_a_')).length, 500);
      } finally {
        db.close();
      }
    });
  });
});
