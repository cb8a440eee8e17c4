import type BetterSqlite3 from 'better-sqlite3';
import { type ChainedInvocation, type ChainHead, chainLink } from '../audit-chain.js';
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
 * The audit chain on SQLite: the head row is read once per transaction (the group commit opens
 * and closes it around its writes, see `GroupCommit`), links are computed in the process, and
 * the head is written back once before the commit. Every write runs in a `BEGIN IMMEDIATE`
 * transaction, so another process on the same file cannot take an end seq in between.
 */
export class SqliteChain {
  private head: { endSeq: number; hash: string } | null = null;
  private dirty = false;
  private readonly readHead: BetterSqlite3.Statement;
  private readonly writeHead: BetterSqlite3.Statement;
  private readonly chainedRows: BetterSqlite3.Statement;
  private readonly byHash: BetterSqlite3.Statement;
  private readonly unlinkedRows: BetterSqlite3.Statement;

  /** `hashing: false` leaves links empty: only for measuring what the hashing costs (bench/). */
  constructor(
    db: BetterSqlite3.Database,
    private readonly hashing = true,
  ) {
    this.readHead = db.prepare('SELECT end_seq, hash, start_end_seq FROM audit_chain WHERE id = 1');
    this.writeHead = db.prepare('UPDATE audit_chain SET end_seq = ?, hash = ? WHERE id = 1');
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
    this.dirty = false;
  }

  /** The link a row gets if it is written now; `digest` is called once (never without hashing). */
  link(digest: () => string): PendingLink {
    if (!this.head) {
      const row = this.readHead.get() as { end_seq: number; hash: string };
      this.head = { endSeq: row.end_seq, hash: row.hash };
    }
    const endSeq = this.head.endSeq + 1;
    const hash = this.hashing ? chainLink(this.head.hash, endSeq, digest()) : this.head.hash;
    return { endSeq, prev: this.head.hash, hash };
  }

  /** The row of `link` was written: the head moves to it. */
  advance(link: PendingLink): void {
    this.head = { endSeq: link.endSeq, hash: link.hash };
    this.dirty = true;
  }

  /** Before the commit: the head is written back once. */
  close(): void {
    if (this.dirty && this.head) this.writeHead.run(this.head.endSeq, this.head.hash);
    this.dirty = false;
    this.head = null;
  }

  currentHead(): ChainHead {
    const row = this.readHead.get() as { end_seq: number; hash: string; start_end_seq: number };
    return { endSeq: row.end_seq, hash: row.hash, startEndSeq: row.start_end_seq };
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
