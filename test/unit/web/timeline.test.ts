import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { DockAuditRow, DockCheckpoint } from '../../../src/web/dock/protocol.js';
import { checkpointBefore, timelineOf, undoable } from '../../../src/web/dock/timeline.js';

function row(id: string, startedAt: number, extra: Partial<DockAuditRow> = {}): DockAuditRow {
  return {
    id,
    seq: startedAt,
    startedAt,
    durationMs: 1,
    tool: 'run_command',
    source: 'computer',
    caller: 'mcp:x',
    via: 'direct',
    state: 'ended',
    success: true,
    errorCode: null,
    errorMessage: null,
    parentId: null,
    jobId: null,
    generation: 1,
    computer: 'named:box',
    input: '{}',
    ...extra,
  };
}

function checkpoint(id: string, createdAt: number, beforeId?: string): DockCheckpoint {
  return {
    id,
    label: null,
    createdAt,
    addedBytes: 0,
    files: 0,
    bytes: 0,
    trigger: beforeId ? 'approval' : 'manual',
    generation: 1,
    before: beforeId ? { invocationId: beforeId, tool: 'run_command', approvalId: 'ap_1' } : null,
  };
}

describe('the dock’s timeline', () => {
  it('undoes a call with the checkpoint taken for it, even though that one was written after the call started', () => {
    const cps = [checkpoint('ck_for_b', 250, 'b'), checkpoint('ck_early', 100)];
    assert.equal(checkpointBefore(row('b', 200), cps)?.id, 'ck_for_b');
  });

  it('otherwise undoes a call with the newest checkpoint taken at or before it started, and never a later one', () => {
    const cps = [checkpoint('ck_late', 300), checkpoint('ck_at', 200), checkpoint('ck_early', 100)];
    assert.equal(checkpointBefore(row('a', 200), cps)?.id, 'ck_at');
    assert.equal(checkpointBefore(row('a', 199), cps)?.id, 'ck_early');
    assert.equal(checkpointBefore(row('a', 99), cps), null);
  });

  it('lists one computer’s calls and checkpoints newest first, a call’s own checkpoint just below it', () => {
    const rows = [row('a', 100), row('b', 200), row('other', 250, { computer: 'named:else' }), row('c', 300)];
    const cps = [checkpoint('ck_for_b', 280, 'b'), checkpoint('ck_150', 150), checkpoint('ck_300', 300)];
    const order = timelineOf('named:box', rows, cps).map((e) =>
      e.kind === 'call' ? e.row.id : e.checkpoint.id,
    );
    assert.deepEqual(order, ['ck_300', 'c', 'b', 'ck_for_b', 'ck_150', 'a']);
  });

  it('offers no undo of a read, or of a call refused before it ran', () => {
    assert.equal(undoable(row('a', 1)), true);
    assert.equal(undoable(row('a', 1, { readOnly: true })), false);
    assert.equal(undoable(row('a', 1, { success: false, errorCode: 'POLICY_DENIED' })), false);
    assert.equal(undoable(row('a', 1, { success: false, errorCode: 'TIMEOUT' })), true);
  });
});
