import { setTimeout as sleep } from 'node:timers/promises';
import type { AuditQuery, AuditStore, StoredInvocation } from './types.js';

/** How often a follower asks the store for rows that ended. */
export const FOLLOW_INTERVAL_MS = 250;

/** Whether a row passes the filters of a query (those a follower applies: tool, caller, time, outcome). */
export function matchesQuery(row: StoredInvocation, q: AuditQuery): boolean {
  if (q.tool !== undefined && row.tool !== q.tool) return false;
  if (q.caller !== undefined && row.caller !== q.caller) return false;
  if (q.parentId !== undefined && row.parentId !== q.parentId) return false;
  if (q.jobId !== undefined && row.jobId !== q.jobId) return false;
  if (q.since !== undefined && row.startedAt < q.since) return false;
  if (q.failed === true && row.success) return false;
  return true;
}

/**
 * Calls `onRow` with every row that ends after `fromEndSeq` and matches `query`, in the order
 * rows ended, until `signal` aborts. It reads the store, not this process's events, so it sees
 * rows of every process and server writing to the same store (`paddock audit --follow`).
 */
export async function followAudit(
  audit: AuditStore,
  query: AuditQuery,
  fromEndSeq: number,
  onRow: (row: StoredInvocation) => Promise<void> | void,
  signal: AbortSignal,
  intervalMs = FOLLOW_INTERVAL_MS,
): Promise<void> {
  let cursor = fromEndSeq;
  while (!signal.aborted) {
    const rows = await audit.ended(cursor, 1000);
    for (const row of rows) {
      cursor = Math.max(cursor, row.endSeq ?? cursor);
      if (matchesQuery(row, query)) await onRow(row);
    }
    if (rows.length === 1000) continue;
    await sleep(intervalMs, undefined, { signal }).catch(() => undefined);
  }
}
