import type BetterSqlite3 from 'better-sqlite3';
import type { Disposable } from '../../shared/disposable.js';
import { type Logger, silentLogger } from '../../shared/logger.js';
import { pidAlive } from '../../shared/pid.js';
import type {
  AuditQuery,
  AuditStore,
  InvocationEnd,
  InvocationRecord,
  InvocationStart,
  InvocationState,
  StoredInvocation,
} from '../audit.js';
import { type ChainedInvocation, type ChainHead, contentDigest } from '../audit-chain.js';
import {
  type AuditRowLimits,
  auditWriteError,
  checkLimit,
  checkNumber,
  endedInvocation,
  fromInvocationRow,
  INVOCATION_COLUMNS,
  type InvocationRow,
  insertValues,
  interruptedMessage,
  notRunning,
  prepareInvocation,
  storedMessage,
} from '../audit-rows.js';
import { EndedFeed } from '../feed.js';
import { SqliteChain } from './audit-chain.js';
import { GroupCommit } from './group-commit.js';
import { applyMigrations } from './migrations.js';

export interface SqliteAuditStoreOptions extends AuditRowLimits {
  /** Receives `audit.listener_failed` when a subscriber throws. */
  logger?: Logger;
  /** How often subscribers get rows other processes wrote (default 500 ms). */
  feedIntervalMs?: number;
  /**
   * `false` writes rows without hashing them into the chain (their links fail verification):
   * only for measuring what the chain costs (bench/). Default true.
   */
  hashChain?: boolean;
}

// end seqs and links come from the chain's head (see SqliteChain), read in the same transaction
const INSERT_SQL = `INSERT INTO tool_invocations (id, started_at, duration_ms, tool, source, caller, via,
  parent_id, generation, job_id, input, output_bytes, sent_bytes, success, error_code, error_message,
  policy_rule, state, owner_pid, input_sha256, approval_id, approver, principal, checkpoint_id, end_seq,
  chain_prev, chain_hash)
  VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`;

const COMPLETE_SET = `UPDATE tool_invocations SET state = 'ended', duration_ms = ?, output_bytes = ?,
  sent_bytes = ?, success = ?, error_code = ?, error_message = ?, policy_rule = ?, end_seq = ?,
  chain_prev = ?, chain_hash = ?`;
/**
 * The update of a row this store began, found by its rowid (its id still checked). Without
 * `job_id` in the SET list SQLite leaves that index alone: one page fewer per commit when
 * the call kept the lineage it began with (the usual case); otherwise COMPLETE_LINEAGE_BY_SEQ_SQL.
 */
const COMPLETE_BY_SEQ_SQL = `${COMPLETE_SET} WHERE seq = ? AND id = ? AND state = 'running'`;
const COMPLETE_LINEAGE_BY_SEQ_SQL = `${COMPLETE_SET}, generation = ?, job_id = ?
  WHERE seq = ? AND id = ? AND state = 'running'`;

const INTERRUPT_SQL = `UPDATE tool_invocations SET state = 'interrupted', success = 0,
  error_code = 'INTERNAL', error_message = ?, duration_ms = ?, end_seq = ?, chain_prev = ?, chain_hash = ?
  WHERE seq = ? AND state = 'running'`;

/**
 * The audit log in SQLite (`tool_invocations`). Writes go through prepared statements and
 * are group-committed (see `GroupCommit`): the rows of calls that begin or end in the same
 * turn of the event loop share one commit. When a write's promise resolves its row is
 * committed (it survives a crash of the process; see `openDatabase` for OS crashes). Inputs
 * are redacted and truncated first. The connection belongs to the caller; pass one from
 * `openDatabase`.
 */
export class SqliteAuditStore implements AuditStore {
  private readonly db: BetterSqlite3.Database;
  private readonly limits: AuditRowLimits;
  private readonly feed: EndedFeed;
  private readonly insert: BetterSqlite3.Statement;
  private readonly insertInput: BetterSqlite3.Statement;
  private readonly insertWithInput: (
    sha256: string,
    input: string,
    values: unknown[],
  ) => BetterSqlite3.RunResult;
  private readonly inputBySha: BetterSqlite3.Statement;
  private readonly hasInput: BetterSqlite3.Statement;
  private readonly completeBySeq: BetterSqlite3.Statement;
  private readonly completeLineageBySeq: BetterSqlite3.Statement;
  private readonly interruptRow: BetterSqlite3.Statement;
  private readonly runningRows: BetterSqlite3.Statement;
  private readonly byId: BetterSqlite3.Statement;
  private readonly endedRows: BetterSqlite3.Statement;
  private readonly maxEndSeq: BetterSqlite3.Statement;
  private readonly chain: SqliteChain;
  private readonly queries = new Map<string, BetterSqlite3.Statement>();
  /** Rows this store began and has not completed: `complete` builds the ended row from them. */
  private readonly running = new Map<string, StoredInvocation>();
  private readonly commits: GroupCommit;

  constructor(db: BetterSqlite3.Database, options: SqliteAuditStoreOptions = {}) {
    applyMigrations(db);
    this.db = db;
    this.limits = options;
    this.insert = db.prepare(INSERT_SQL);
    this.insertInput = db.prepare('INSERT OR IGNORE INTO audit_inputs (sha256, input) VALUES (?, ?)');
    this.inputBySha = db.prepare('SELECT input FROM audit_inputs WHERE sha256 = ?');
    this.hasInput = db.prepare('SELECT 1 FROM audit_inputs WHERE sha256 = ?').pluck();
    this.insertWithInput = db.transaction((sha256: string, input: string, values: unknown[]) => {
      // an input seen before is not bound again (64 KiB converted and compared for nothing)
      if (this.hasInput.get(sha256) === undefined) this.insertInput.run(sha256, input);
      return this.insert.run(...values);
    });
    this.completeBySeq = db.prepare(COMPLETE_BY_SEQ_SQL);
    this.completeLineageBySeq = db.prepare(COMPLETE_LINEAGE_BY_SEQ_SQL);
    this.interruptRow = db.prepare(INTERRUPT_SQL);
    this.runningRows = db.prepare(
      // running rows are the NULLs of the end_seq index (see migration 11)
      "SELECT id, owner_pid FROM tool_invocations WHERE end_seq IS NULL AND state = 'running' ORDER BY seq",
    );
    this.byId = db.prepare(`SELECT ${INVOCATION_COLUMNS} FROM tool_invocations WHERE id = ?`);
    this.endedRows = db.prepare(
      `SELECT ${INVOCATION_COLUMNS} FROM tool_invocations WHERE end_seq > ? ORDER BY end_seq LIMIT ?`,
    );
    this.maxEndSeq = db.prepare('SELECT coalesce(max(end_seq), 0) AS n FROM tool_invocations');
    this.chain = new SqliteChain(db, options.hashChain !== false);
    this.commits = new GroupCommit(db, this.chain);
    this.feed = new EndedFeed({
      read: (after, limit) => this.ended(after, limit),
      last: () => this.lastEndSeq(),
      logger: options.logger ?? silentLogger(),
      ...(options.feedIntervalMs !== undefined ? { intervalMs: options.feedIntervalMs } : {}),
    });
  }

  async record(row: InvocationRecord): Promise<StoredInvocation> {
    const stored = await this.write(row, 'ended');
    this.feed.push(stored);
    return stored;
  }

  /** Listeners see the row once, when it ends. */
  async begin(row: InvocationStart): Promise<StoredInvocation> {
    const stored = await this.write(
      { ...row, durationMs: 0, outputBytes: 0, success: false, errorCode: null, errorMessage: null },
      'running',
    );
    this.running.set(stored.id, stored);
    return stored;
  }

  /**
   * A row this store began is updated by its rowid and the ended row is built from the one
   * held since `begin`, rather than read back; a row begun elsewhere (another store on the
   * same file) is read in the write's transaction. Either way the ended row's content is
   * hashed into its chain link before it is written.
   */
  async complete(id: string, end: InvocationEnd): Promise<StoredInvocation> {
    const begun = this.running.get(id);
    this.running.delete(id);
    const errorMessage = end.errorMessage == null ? null : storedMessage(end.errorMessage, this.limits);
    const values = [
      end.durationMs,
      end.outputBytes,
      end.sentBytes ?? null,
      end.success ? 1 : 0,
      end.errorCode ?? null,
      errorMessage,
      end.policyRule ?? null,
    ];
    const ended = (from: StoredInvocation): StoredInvocation => endedInvocation(from, end, errorMessage);
    let stored: StoredInvocation | undefined;
    try {
      stored = await this.commits.run(() => {
        const from = begun ?? this.row(id);
        if (from?.state !== 'running') return undefined;
        const row = ended(from);
        const link = this.chain.link(() => contentDigest(row));
        const chained = [...values, link.endSeq, link.prev, link.hash];
        const changes =
          row.generation === from.generation && row.jobId === from.jobId
            ? this.completeBySeq.run(...chained, from.seq, id).changes
            : this.completeLineageBySeq.run(...chained, row.generation, row.jobId, from.seq, id).changes;
        if (changes !== 1) return undefined;
        this.chain.advance(link);
        return { ...row, endSeq: link.endSeq };
      });
    } catch (e) {
      throw writeError(id, e);
    }
    if (!stored) throw notRunning(id);
    this.feed.push(stored);
    return stored;
  }

  async reconcile(isAlive: (pid: number) => boolean = pidAlive): Promise<number> {
    const now = Date.now();
    let marked = 0;
    for (const running of this.runningRows.all() as { id: string; owner_pid: number | null }[]) {
      const pid = running.owner_pid;
      if (pid !== null && (pid === process.pid || isAlive(pid))) continue;
      const stored = await this.commits.run(() => {
        const from = this.row(running.id);
        if (from?.state !== 'running') return undefined;
        const row: StoredInvocation = {
          ...from,
          state: 'interrupted',
          success: false,
          errorCode: 'INTERNAL',
          errorMessage: interruptedMessage(pid),
          durationMs: Math.max(0, now - from.startedAt),
        };
        const link = this.chain.link(() => contentDigest(row));
        const changes = this.interruptRow.run(
          row.errorMessage,
          row.durationMs,
          link.endSeq,
          link.prev,
          link.hash,
          from.seq,
        ).changes;
        if (changes !== 1) return undefined;
        this.chain.advance(link);
        return { ...row, endSeq: link.endSeq };
      });
      if (!stored) continue;
      marked++;
      this.feed.push(stored);
    }
    return marked;
  }

  async fullInput(sha256: string): Promise<string | undefined> {
    return (this.inputBySha.get(sha256) as { input: string } | undefined)?.input;
  }

  private async write(row: InvocationRecord, state: InvocationState): Promise<StoredInvocation> {
    const { fullInput, ...stored } = prepareInvocation(row, state, this.limits);
    const values = insertValues(stored, state, stored.success ? 1 : 0);
    try {
      // a long input and its row commit together, so there is never a row without its input
      return await this.commits.run(() => {
        const link = state === 'running' ? null : this.chain.link(() => contentDigest(stored));
        const all = [...values, link?.endSeq ?? null, link?.prev ?? null, link?.hash ?? null];
        const info =
          stored.inputSha256 !== null && fullInput !== null
            ? this.insertWithInput(stored.inputSha256, fullInput, all)
            : this.insert.run(...all);
        if (link) this.chain.advance(link);
        return { seq: Number(info.lastInsertRowid), endSeq: link?.endSeq ?? null, ...stored };
      });
    } catch (e) {
      throw writeError(row.id, e);
    }
  }

  /** Rows matching every given filter, newest first unless `ascending`. */
  async query(q: AuditQuery = {}): Promise<StoredInvocation[]> {
    const limit = checkLimit(q.limit);
    const where: string[] = [];
    const params: unknown[] = [];
    const add = (clause: string, value: unknown) => {
      where.push(clause);
      params.push(value);
    };
    if (q.tool !== undefined) add('tool = ?', q.tool);
    if (q.caller !== undefined) add('caller = ?', q.caller);
    if (q.principal !== undefined) add('principal = ?', q.principal);
    if (q.parentId !== undefined) add('parent_id = ?', q.parentId);
    if (q.jobId !== undefined) add('job_id = ?', q.jobId);
    if (q.since !== undefined) add('started_at >= ?', checkNumber('since', q.since));
    if (q.afterSeq !== undefined) add('seq > ?', checkNumber('afterSeq', q.afterSeq));
    if (q.beforeSeq !== undefined) add('seq < ?', checkNumber('beforeSeq', q.beforeSeq));
    if (q.failed === true) where.push('success = 0');
    const sql =
      `SELECT ${INVOCATION_COLUMNS} FROM tool_invocations` +
      (where.length > 0 ? ` WHERE ${where.join(' AND ')}` : '') +
      ` ORDER BY seq ${q.ascending ? 'ASC' : 'DESC'} LIMIT ?`;
    let statement = this.queries.get(sql);
    if (!statement) {
      statement = this.db.prepare(sql);
      this.queries.set(sql, statement);
    }
    return (statement.all(...params, limit) as InvocationRow[]).map(fromInvocationRow);
  }

  async get(id: string): Promise<StoredInvocation | undefined> {
    return this.row(id);
  }

  private row(id: string): StoredInvocation | undefined {
    const row = this.byId.get(id) as InvocationRow | undefined;
    return row ? fromInvocationRow(row) : undefined;
  }

  async ended(afterEndSeq: number, limit?: number): Promise<StoredInvocation[]> {
    const rows = this.endedRows.all(checkNumber('afterEndSeq', afterEndSeq), checkLimit(limit));
    return (rows as InvocationRow[]).map(fromInvocationRow);
  }

  async lastEndSeq(): Promise<number> {
    return (this.maxEndSeq.get() as { n: number }).n;
  }

  subscribe(listener: (row: StoredInvocation) => void): Disposable {
    return this.feed.subscribe(listener);
  }

  async chained(afterEndSeq: number, limit?: number): Promise<ChainedInvocation[]> {
    return this.chain.chained(afterEndSeq, limit);
  }

  async chainHead(): Promise<ChainHead> {
    return this.chain.currentHead();
  }

  async byChainHash(hash: string): Promise<ChainedInvocation | undefined> {
    return this.chain.find(hash);
  }

  async unlinked(limit?: number): Promise<ChainedInvocation[]> {
    return this.chain.unlinked(limit);
  }

  /** Stops the polling of subscribers (before the connection closes). */
  close(): void {
    this.feed.close();
  }
}

function writeError(id: string, e: unknown) {
  const reason = e instanceof Error ? e.message : String(e);
  return auditWriteError(id, reason, reason.includes('UNIQUE constraint failed: tool_invocations.id'));
}
