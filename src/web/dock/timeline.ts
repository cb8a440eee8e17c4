/**
 * A computer's timeline as the dock shows it: its checkpoints between its tool calls, newest
 * first, and which checkpoint takes it back to just before a call. Pure (the page imports it).
 */
import type { DockAuditRow, DockCheckpoint } from './protocol.js';

/** One line of the timeline. */
export type TimelineEntry =
  | { kind: 'call'; row: DockAuditRow }
  | { kind: 'checkpoint'; checkpoint: DockCheckpoint };

/**
 * The checkpoint that brings the computer back to just before call `row`: the one taken for that
 * call (its `before` names the row), else the newest taken at or before the call started. Null
 * when none is left (retention dropped it, or none was taken).
 */
export function checkpointBefore(
  row: Pick<DockAuditRow, 'id' | 'startedAt'>,
  checkpoints: readonly DockCheckpoint[],
): DockCheckpoint | null {
  const own = checkpoints.find((c) => c.before?.invocationId === row.id);
  if (own) return own;
  let best: DockCheckpoint | null = null;
  for (const c of checkpoints)
    if (c.createdAt <= row.startedAt && (!best || c.createdAt > best.createdAt)) best = c;
  return best;
}

/**
 * `computer`'s calls (of `rows`, any computers') and `checkpoints` in one list, newest first. A
 * checkpoint taken for a call sits just below that call (it holds the state before it), even
 * though it was written after the call started (an approval came first).
 */
export function timelineOf(
  computer: string,
  rows: Iterable<DockAuditRow>,
  checkpoints: readonly DockCheckpoint[],
): TimelineEntry[] {
  const calls = [...rows].filter((r) => r.computer === computer);
  const started = new Map(calls.map((r) => [r.id, r.startedAt]));
  const keyed: { at: number; order: number; entry: TimelineEntry }[] = [
    ...calls.map((row) => ({ at: row.startedAt, order: 1, entry: { kind: 'call', row } as const })),
    ...checkpoints.map((checkpoint) => {
      const call = checkpoint.before ? started.get(checkpoint.before.invocationId) : undefined;
      return {
        at: call ?? checkpoint.createdAt,
        // at the same time, a call's own checkpoint is older than the call
        order: call === undefined ? 2 : 0,
        entry: { kind: 'checkpoint', checkpoint } as const,
      };
    }),
  ];
  keyed.sort((a, b) => b.at - a.at || b.order - a.order);
  return keyed.map((k) => k.entry);
}

/** Whether a call changed something a restore could undo (not a read, and not refused before running). */
export function undoable(row: DockAuditRow): boolean {
  return (
    row.readOnly !== true && row.errorCode !== 'POLICY_DENIED' && row.errorCode !== 'PERMISSION_REQUIRED'
  );
}
