/**
 * `paddock audit export`: rows in end seq order with their chain links, as JSON lines of our
 * own shape or as OCSF events (class API Activity, 6003) for a SIEM. Either form carries the
 * chain, so what was exported can be verified against the database or a signed head later.
 */
import type { ChainedInvocation } from '../store/audit-chain.js';

/** The OCSF version the events follow. */
export const OCSF_VERSION = '1.1.0';

/** The row as a JSON line: every stored field, the links included. */
export function toJsonLine(row: ChainedInvocation): string {
  return JSON.stringify(row);
}

/** The row as an OCSF API Activity event (activity "Other": a tool call). */
export function toOcsf(row: ChainedInvocation): Record<string, unknown> {
  const failed = !row.success;
  return {
    category_uid: 6,
    category_name: 'Application Activity',
    class_uid: 6003,
    class_name: 'API Activity',
    activity_id: 99,
    activity_name: 'Tool Call',
    type_uid: 600399,
    time: row.startedAt,
    duration: Math.round(row.durationMs),
    severity_id: failed ? 3 : 1,
    status_id: failed ? 2 : 1,
    status: failed ? 'Failure' : 'Success',
    ...(row.errorCode ? { status_code: row.errorCode } : {}),
    ...(row.errorMessage ? { status_detail: row.errorMessage } : {}),
    api: {
      operation: row.tool,
      service: { name: row.source },
      request: { uid: row.id },
    },
    actor: { user: { uid: row.caller, name: row.caller } },
    metadata: {
      version: OCSF_VERSION,
      product: { name: 'Paddock', vendor_name: 'Paddock' },
      uid: row.id,
      ...(row.parentId ? { correlation_uid: row.parentId } : {}),
      log_name: 'tool_invocations',
      sequence: row.endSeq,
    },
    unmapped: {
      via: row.via,
      state: row.state,
      input: row.input,
      input_sha256: row.inputSha256,
      output_bytes: row.outputBytes,
      sent_bytes: row.sentBytes,
      generation: row.generation,
      job_id: row.jobId,
      policy_rule: row.policyRule,
      approval_id: row.approvalId,
      approver: row.approver,
      chain_prev: row.chainPrev,
      chain_hash: row.chainHash,
    },
  };
}
