import type BetterSqlite3 from 'better-sqlite3';
import { type ChainedInvocation, type ChainHead, chainLink, GENESIS_HASH } from '../audit-chain.js';
import {
  CHAIN_COLUMNS,
  type ChainedRow,
  checkLimit,
  checkNumber,
  fromChainedRow,
  INVOCATION_COLUMNS,
  UNLINKED_WHERE,
} from '../audit-rows.js';

/** A link about to be written: taken with {@link SqliteChain.link}, kept with {@link SqliteChain.advance}. */
export interface PendingLink {
  endSeq: number;
  prev: string;
  hash: string;
}

/**
 * The audit chain on SQLite. The head is the last ended row (through the end_seq index), read
 * once per transaction — the group commit opens and closes it around its writes, see
 * `GroupCommit` — and links are computed in the process; nothing but the rows is written, so a
 * commit writes no page more than before the chain. Every write runs in a `BEGIN IMMEDIATE`
 * transaction, so another process on the same file cannot take an end seq in between.
 * (PostgreSQL keeps a head row instead: its lock orders the fleet's end seqs.)
 */
export class SqliteChain {
  private head: { endSeq: number; hash: string } | null = null;
  private readonly lastRow: BetterSqlite3.Statement;
  private readonly start: BetterSqlite3.Statement;
  private readonly chainedRows: BetterSqlite3.Statement;
  private readonly byHash: BetterSqlite3.Statement;
  private readonly unlinkedRows: BetterSqlite3.Statement;

  /** `hashing: false` leaves links empty: only for measuring what the hashing costs (bench/). */
  constructor(
    db: BetterSqlite3.Database,
    private readonly hashing = true,
  ) {
    this.lastRow = db.prepare(
      'SELECT end_seq, chain_hash FROM tool_invocations WHERE end_seq IS NOT NULL ORDER BY end_seq DESC LIMIT 1',
    );
    this.start = db.prepare('SELECT start_end_seq FROM audit_chain WHERE id = 1').pluck();
    const columns = `${INVOCATION_COLUMNS}, ${CHAIN_COLUMNS}`;
    this.chainedRows = db.prepare(
      `SELECT ${columns} FROM tool_invocations WHERE end_seq > ? ORDER BY end_seq LIMIT ?`,
    );
    this.byHash = db.prepare(`SELECT ${columns} FROM tool_invocations WHERE chain_hash = ? LIMIT 1`);
    this.unlinkedRows = db.prepare(
      `SELECT ${columns} FROM tool_invocations WHERE ${UNLINKED_WHERE} ORDER BY seq LIMIT ?`,
    );
  }

  /** A transaction begins: the head is read again at the first link. */
  open(): void {
    this.head = null;
  }

  /** The link a row gets if it is written now; `digest` is called once (never without hashing). */
  link(digest: () => string): PendingLink {
    this.head ??= this.readHead();
    const endSeq = this.head.endSeq + 1;
    const hash = this.hashing ? chainLink(this.head.hash, endSeq, digest()) : this.head.hash;
    return { endSeq, prev: this.head.hash, hash };
  }

  /** The last ended row's end seq and link (the genesis after rows older than the chain). */
  private readHead(): { endSeq: number; hash: string } {
    const row = this.lastRow.get() as { end_seq: number; chain_hash: string | null } | undefined;
    return { endSeq: row?.end_seq ?? 0, hash: row?.chain_hash ?? GENESIS_HASH };
  }

  /** The row of `link` was written: the head moves to it. */
  advance(link: PendingLink): void {
    this.head = { endSeq: link.endSeq, hash: link.hash };
  }

  /** Before the commit: the next transaction reads the head again. */
  close(): void {
    this.head = null;
  }

  currentHead(): ChainHead {
    return { ...this.readHead(), startEndSeq: this.start.get() as number };
  }

  chained(afterEndSeq: number, limit?: number): ChainedInvocation[] {
    const rows = this.chainedRows.all(checkNumber('afterEndSeq', afterEndSeq), checkLimit(limit));
    return (rows as ChainedRow[]).map(fromChainedRow);
  }

  find(hash: string): ChainedInvocation | undefined {
    const row = this.byHash.get(hash) as ChainedRow | undefined;
    return row ? fromChainedRow(row) : undefined;
  }

  unlinked(limit?: number): ChainedInvocation[] {
    const start = this.currentHead().startEndSeq;
    return (this.unlinkedRows.all(start, checkLimit(limit)) as ChainedRow[]).map(fromChainedRow);
  }
}
