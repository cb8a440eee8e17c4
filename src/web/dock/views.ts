/** Conversions from the stores' shapes to what the page shows. */
import type { StoredInvocation } from '../../audit/types.js';
import { summarizeCall } from './call-summary.js';
import type { DockAuditRow, DockStatus } from './protocol.js';

/** Characters of a row's (already redacted) input sent to the page. */
export const INPUT_PREVIEW_CHARS = 600;

/** The status shown when the server runs no computer service. */
export const UNAVAILABLE_STATUS: DockStatus = {
  generation: null,
  profileId: null,
  profileName: null,
  lifecycle: 'unavailable',
  bootError: null,
  bootMs: null,
  capabilities: [],
  message: 'This server runs without the computer service; tools still work over /mcp.',
};

/**
 * Converts a stored audit row to what the page shows; `computerOf` names the computer of its
 * generation when the server knows it.
 */
export function toDockAuditRow(
  row: StoredInvocation,
  computerOf?: (generation: number) => string | null,
  callerLabel?: (caller: string) => string,
): DockAuditRow {
  return {
    id: row.id,
    seq: row.seq,
    startedAt: row.startedAt,
    durationMs: Math.round(row.durationMs * 10) / 10,
    tool: row.tool,
    source: row.source,
    caller: row.caller,
    via: row.via,
    state: row.state,
    success: row.success,
    errorCode: row.errorCode ?? null,
    errorMessage: row.errorMessage ?? null,
    parentId: row.parentId ?? null,
    jobId: row.jobId ?? null,
    generation: row.generation ?? null,
    computer: row.generation != null && computerOf ? computerOf(row.generation) : null,
    approvalId: row.approvalId ?? null,
    approver: row.approver ?? null,
    checkpointId: row.checkpointId ?? null,
    ...(callerLabel ? { callerLabel: callerLabel(row.caller) } : {}),
    summary: summarizeCall(row.tool, row.input),
    input:
      row.input.length > INPUT_PREVIEW_CHARS ? `${row.input.slice(0, INPUT_PREVIEW_CHARS - 1)}…` : row.input,
  };
}
