/**
 * `paddock audit verify`: walks the hash chain of the audit log (see store/audit-chain.ts) in
 * end seq order, page by page, recomputing every row's link, and names the first row that was
 * changed, removed, inserted or moved. Each row's own link proves its content and place; the
 * link it names proves its predecessor; end seqs are dense, so a gap is a removed row. The tail
 * is proven by a signed head kept outside the database (and on PostgreSQL also by the head row,
 * which an editor must rewrite too).
 */
import {
  type ChainedInvocation,
  type ChainHead,
  chainLink,
  contentDigest,
  GENESIS_HASH,
} from '../store/audit-chain.js';
import type { AuditStore } from './types.js';

/** What was found wrong, at the first place it shows. */
export type ChainProblemKind = 'changed' | 'removed' | 'inserted' | 'reordered' | 'truncated';

export interface ChainProblem {
  kind: ChainProblemKind;
  /** The end seq where the problem shows (the row's, or the first missing one). */
  endSeq: number;
  /** The row concerned, when one exists. */
  id: string | null;
  message: string;
}

/** The outcome of a verification. */
export interface ChainReport {
  ok: boolean;
  /** Rows whose links were checked. */
  checked: number;
  /** End seqs covered: from the first checked to the last. */
  fromEndSeq: number | null;
  toEndSeq: number | null;
  /** Rows that ended before the chain existed (not linked, not checked). */
  unchainedBefore: number;
  head: ChainHead;
  problem: ChainProblem | null;
}

export interface VerifyOptions {
  /** First end seq to check (default: the chain's start). The row before it anchors the walk. */
  fromEndSeq?: number;
  /** Last end seq to check (default: the head). */
  toEndSeq?: number;
  /** Rows read per page; default 1,000. */
  pageSize?: number;
}

/** Verifies the chain (or the range) of `audit`. Stops at the first problem. */
export async function verifyChain(audit: AuditStore, options: VerifyOptions = {}): Promise<ChainReport> {
  const head = await audit.chainHead();
  const pageSize = options.pageSize ?? 1000;
  const start = Math.max(options.fromEndSeq ?? head.startEndSeq + 1, head.startEndSeq + 1);
  const to = options.toEndSeq ?? Number.POSITIVE_INFINITY;
  const report: ChainReport = {
    ok: true,
    checked: 0,
    fromEndSeq: null,
    toEndSeq: null,
    unchainedBefore: head.startEndSeq,
    head,
    problem: null,
  };
  const fail = (problem: ChainProblem): ChainReport => ({ ...report, ok: false, problem });

  // the anchor: the link before `start` (the row before it, or the genesis)
  let prev: { endSeq: number; hash: string; id: string | null } = {
    endSeq: head.startEndSeq,
    hash: GENESIS_HASH,
    id: null,
  };
  if (start > head.startEndSeq + 1) {
    const before = (await audit.chained(start - 2, 1))[0];
    if (before && before.endSeq === start - 1 && before.chainHash)
      prev = { endSeq: start - 1, hash: before.chainHash, id: before.id };
    else prev = { endSeq: start - 1, hash: '', id: null }; // unknown: the first row's link is taken
  }

  let after = start - 1;
  for (;;) {
    const page = (await audit.chained(after, pageSize)).filter((r) => (r.endSeq ?? 0) <= to);
    for (const row of page) {
      const problem = await judgeRow(audit, row, prev);
      if (problem) return fail(problem);
      prev = { endSeq: row.endSeq!, hash: row.chainHash!, id: row.id };
      report.checked++;
      report.fromEndSeq ??= row.endSeq;
      report.toEndSeq = row.endSeq;
    }
    if (page.length < pageSize) break;
    after = page.at(-1)!.endSeq!;
  }

  if (to === Number.POSITIVE_INFINITY) {
    if (prev.endSeq < head.endSeq) {
      return fail({
        kind: 'truncated',
        endSeq: prev.endSeq + 1,
        id: null,
        message: `Rows after end seq ${prev.endSeq} were removed: the chain's head says the last row is end seq ${head.endSeq}.`,
      });
    }
    if (prev.endSeq > head.endSeq) {
      return fail({
        kind: 'inserted',
        endSeq: head.endSeq + 1,
        id: prev.id,
        message: `Rows beyond the chain's head (end seq ${head.endSeq}) were inserted, up to row ${prev.id} (end seq ${prev.endSeq}).`,
      });
    }
    if (prev.endSeq === head.endSeq && prev.hash !== head.hash && report.checked > 0) {
      return fail({
        kind: 'changed',
        endSeq: prev.endSeq,
        id: prev.id,
        message: `The last row (end seq ${prev.endSeq}, ${prev.id}) does not match the chain's head: it or the head was rewritten.`,
      });
    }
    const stray = (await audit.unlinked(1))[0];
    if (stray) {
      return fail({
        kind: 'inserted',
        endSeq: stray.endSeq ?? 0,
        id: stray.id,
        message: `Row ${stray.id} claims to have ended (${stray.state}) but is not in the chain: it was written around the audit store.`,
      });
    }
  }
  return report;
}

/** The problem of `row` given the row before it, or null when its link and its place hold. */
async function judgeRow(
  audit: AuditStore,
  row: ChainedInvocation,
  prev: { endSeq: number; hash: string; id: string | null },
): Promise<ChainProblem | null> {
  const endSeq = row.endSeq!;
  const at = `row ${row.id} (end seq ${endSeq})`;
  if (!row.chainHash || !row.chainPrev) {
    return {
      kind: 'inserted',
      endSeq,
      id: row.id,
      message: `The ${at} has no link in the chain: it was inserted after the chain began.`,
    };
  }
  const selfOk = chainLink(row.chainPrev, endSeq, contentDigest(row)) === row.chainHash;
  const linkOk = prev.hash === '' || row.chainPrev === prev.hash;
  if (selfOk && linkOk && endSeq === prev.endSeq + 1) return null;
  // where does the link this row names point?
  const named = row.chainPrev === GENESIS_HASH ? null : await audit.byChainHash(row.chainPrev);
  if (named && (named.endSeq ?? 0) > endSeq) {
    return {
      kind: 'reordered',
      endSeq,
      id: row.id,
      message: `The ${at} is out of order: it was written after row ${named.id}, which now stands at end seq ${named.endSeq}.`,
    };
  }
  if (named && (named.endSeq ?? 0) < prev.endSeq) {
    const first = (await audit.chained(named.endSeq ?? 0, 1))[0];
    return {
      kind: 'inserted',
      endSeq: first?.endSeq ?? prev.endSeq,
      id: first?.id ?? prev.id,
      message: `Row ${first?.id ?? prev.id} (end seq ${first?.endSeq ?? prev.endSeq}) was inserted: the ${at} was written right after row ${named.id} (end seq ${named.endSeq}).`,
    };
  }
  if (!selfOk) {
    return {
      kind: 'changed',
      endSeq,
      id: row.id,
      message: `The ${at} was changed: its content no longer matches its link.`,
    };
  }
  if (endSeq > prev.endSeq + 1) {
    const missing =
      endSeq === prev.endSeq + 2 ? `end seq ${prev.endSeq + 1}` : `end seqs ${prev.endSeq + 1}–${endSeq - 1}`;
    return {
      kind: 'removed',
      endSeq: prev.endSeq + 1,
      id: null,
      message: `The row${endSeq === prev.endSeq + 2 ? '' : 's'} at ${missing}, before ${at}, ${endSeq === prev.endSeq + 2 ? 'was' : 'were'} removed.`,
    };
  }
  return {
    kind: 'changed',
    endSeq: prev.endSeq,
    id: prev.id,
    message: `Row ${prev.id} (end seq ${prev.endSeq}) was changed and its link recomputed: the ${at} still names the link it had.`,
  };
}
