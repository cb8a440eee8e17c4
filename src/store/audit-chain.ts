/**
 * The hash chain of the audit log. Every row that ends (its outcome written, or marked
 * interrupted) joins one chain, in `endSeq` order: its link is
 * `sha256(prev + "|" + endSeq + "|" + digest)`, where `digest` is the SHA-256 of the row's
 * content in a fixed field order and `prev` the link of the row before it (64 zeros for the
 * first). Both stores compute links the same way (SQLite in the process, PostgreSQL in the
 * statement that takes the end seq), so one verifier reads both. The chain's head (the last
 * end seq and link) is kept in a one-row table beside the rows.
 */
import crypto from 'node:crypto';
import type { StoredInvocation } from './audit.js';

/**
 * SHA-256 (hex) of a string. `crypto.hash` (Node 20.12 and later) is one call with no hash
 * object: a fifth of the cost of createHash for inputs this small; older Node builds fall back.
 */
const sha256: (text: string) => string =
  typeof crypto.hash === 'function'
    ? (text) => crypto.hash('sha256', text, 'hex')
    : (text) => crypto.createHash('sha256').update(text).digest('hex');

/** The link before the first row of a chain. */
export const GENESIS_HASH = '0'.repeat(64);

/** The fields a link covers, in order (everything of a row but its storage sequences and owner). */
export type ChainContent = Pick<
  StoredInvocation,
  | 'id'
  | 'startedAt'
  | 'durationMs'
  | 'tool'
  | 'source'
  | 'caller'
  | 'via'
  | 'parentId'
  | 'generation'
  | 'jobId'
  | 'input'
  | 'inputSha256'
  | 'outputBytes'
  | 'sentBytes'
  | 'success'
  | 'errorCode'
  | 'errorMessage'
  | 'policyRule'
  | 'approvalId'
  | 'approver'
  | 'principal'
  | 'state'
  | 'checkpointId'
>;

/**
 * SHA-256 (hex) of a row's content: a JSON array of its fields in a fixed order. Fields added
 * after the chain existed are appended only when set, so the digest of every row written before
 * them (and of every row that leaves them unset) stays what it was.
 */
export function contentDigest(row: ChainContent): string {
  const fields = [
    1, // version of this layout
    row.id,
    row.startedAt,
    row.durationMs,
    row.tool,
    row.source,
    row.caller,
    row.via,
    row.parentId ?? null,
    row.generation ?? null,
    row.jobId ?? null,
    row.input,
    row.inputSha256 ?? null,
    row.outputBytes,
    row.sentBytes ?? null,
    row.success,
    row.errorCode ?? null,
    row.errorMessage ?? null,
    row.policyRule ?? null,
    row.approvalId ?? null,
    row.approver ?? null,
    row.state,
    row.principal ?? null,
  ];
  if (row.checkpointId != null) fields.push(row.checkpointId);
  return sha256(JSON.stringify(fields));
}

/** The link of a row: its content digest bound to its end seq and to the link before it. */
export function chainLink(prev: string, endSeq: number, digest: string): string {
  return sha256(`${prev}|${endSeq}|${digest}`);
}

/** The head of the chain: the last end seq given and its link. */
export interface ChainHead {
  endSeq: number;
  hash: string;
  /** Rows that ended at or below this end seq were written before the chain existed (unlinked). */
  startEndSeq: number;
}

/** A stored row with its place in the chain (null links: running, or older than the chain). */
export interface ChainedInvocation extends StoredInvocation {
  chainPrev: string | null;
  chainHash: string | null;
}
