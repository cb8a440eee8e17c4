/** Reading a data directory's audit log and the host's processes from a test, beside a server. */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { StoredInvocation } from '../../src/audit/types.js';
import { fromInvocationRow, INVOCATION_COLUMNS, type InvocationRow } from '../../src/store/audit-rows.js';
import { type Database, openDatabase } from '../../src/store/sqlite/database.js';

/** Pids of processes whose command line contains `marker`. */
export function processesWith(marker: string): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
    try {
      if (readFileSync(`/proc/${entry}/cmdline`, 'utf8').replaceAll('\0', ' ').includes(marker))
        pids.push(Number(entry));
    } catch {
      // gone meanwhile
    }
  }
  return pids;
}

/** Every row of the audit log, read through a connection of the test's own. */
export function rows(dataDir: string): StoredInvocation[] {
  const db = openDatabase(join(dataDir, 'paddock.db'));
  try {
    return auditRowsOf(db);
  } finally {
    db.close();
  }
}

/**
 * The audit rows in an open SQLite database, oldest first (`tool`: of that tool only), read
 * with SQL at once: a test that polls for a row needs no promise.
 */
export function auditRowsOf(db: Database, tool?: string): StoredInvocation[] {
  const where = tool === undefined ? '' : ' WHERE tool = ?';
  const statement = db.prepare(`SELECT ${INVOCATION_COLUMNS} FROM tool_invocations${where} ORDER BY seq`);
  const found = (tool === undefined ? statement.all() : statement.all(tool)) as InvocationRow[];
  return found.map(fromInvocationRow);
}

/** Ids of agent runs, the other kind of parent a row may name. */
export function runIds(dataDir: string): Set<string> {
  const db = openDatabase(join(dataDir, 'paddock.db'));
  try {
    return new Set((db.prepare('SELECT id FROM agent_runs').all() as { id: string }[]).map((r) => r.id));
  } finally {
    db.close();
  }
}

/** Parent ids named by some row that no row (nor agent run) has. */
export function missingParents(dataDir: string): string[] {
  const all = rows(dataDir);
  const ids = new Set(all.map((r) => r.id));
  const runs = runIds(dataDir);
  return all.flatMap((r) =>
    r.parentId && !ids.has(r.parentId) && !runs.has(r.parentId) ? [r.parentId] : [],
  );
}
