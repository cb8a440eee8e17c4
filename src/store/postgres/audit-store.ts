/**
 * The audit log on PostgreSQL. Each write is one autocommit statement: when its promise
 * resolves the row is committed, so the gateway never answers a call before its row exists (a
 * lost database rejects the write, and the call fails with INTERNAL instead of answering).
 */
import type { Disposable } from '../../shared/disposable.js';
import type { Logger } from '../../shared/logger.js';
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
  CHAIN_COLUMNS,
  type ChainedRow,
  checkLimit,
  checkNumber,
  endedInvocation,
  fromChainedRow,
  fromInvocationRow,
  INVOCATION_COLUMNS,
  type InvocationRow,
  insertValues,
  interruptedMessage,
  notRunning,
  prepareInvocation,
  storedMessage,
  UNLINKED_WHERE,
} from '../audit-rows.js';
import { EndedFeed } from '../feed.js';
import type { PgDatabase } from './database.js';

const STORE = 'audit';

/**
 * Moves the chain's head one step for a row whose content digest is `$DIGEST`: the new end seq
 * and link, and the link before it. The head's row lock is held until commit, so end seqs
 * commit in the order they are given (a follower that read up to N never finds a row below N
 * later) and each link builds on the one committed before it.
 */
const advanceHead = (
  digest: string,
  when: string,
) => `UPDATE audit_chain SET end_seq = end_seq + 1, prev = hash,
    hash = encode(sha256(convert_to(hash || '|' || (end_seq + 1)::text || '|' || ${digest}::text, 'UTF8')), 'hex')
  WHERE id = 1 AND ${when}
  RETURNING end_seq, prev, hash`;

// The whole input (when the row keeps a preview) is stored in the same statement.
const INSERT = {
  name: 'paddock_audit_insert_chained',
  text: `WITH full_input AS (
      INSERT INTO audit_inputs (sha256, input) SELECT $20::text, $25::text WHERE $20::text IS NOT NULL
      ON CONFLICT (sha256) DO NOTHING
    ), head AS (${advanceHead('$27', "$18::text <> 'running'")})
    INSERT INTO tool_invocations (id, started_at, duration_ms, tool, source, caller, via, parent_id,
      generation, job_id, input, output_bytes, sent_bytes, success, error_code, error_message,
      policy_rule, state, owner_pid, input_sha256, approval_id, approver, principal, checkpoint_id,
      owner_host, end_seq, chain_prev, chain_hash)
    SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20,
      $21, $22, $23, $24, $26, head.end_seq, head.prev, head.hash
    FROM (SELECT 1) AS one LEFT JOIN head ON true
    RETURNING seq, end_seq`,
};

const RETURNED = INVOCATION_COLUMNS.split(', ')
  .map((c) => `t.${c}`)
  .join(', ');

// The row is locked first and the head moves only when it is still running: a refused
// complete leaves no link without a row.
const COMPLETE = {
  name: 'paddock_audit_complete_chained',
  text: `WITH target AS (
      SELECT seq FROM tool_invocations WHERE id = $10 AND state = 'running' FOR UPDATE
    ), head AS (${advanceHead('$11', 'EXISTS (SELECT 1 FROM target)')})
    UPDATE tool_invocations t SET state = 'ended', duration_ms = $1, output_bytes = $2, sent_bytes = $3,
      success = $4, error_code = $5, error_message = $6, policy_rule = $7, generation = $8, job_id = $9,
      end_seq = head.end_seq, chain_prev = head.prev, chain_hash = head.hash
    FROM head, target WHERE t.seq = target.seq
    RETURNING ${RETURNED}`,
};

const INTERRUPT = `WITH target AS (
    SELECT seq FROM tool_invocations WHERE id = $3 AND state = 'running' FOR UPDATE
  ), head AS (${advanceHead('$4', 'EXISTS (SELECT 1 FROM target)')})
  UPDATE tool_invocations t SET state = 'interrupted', success = false, error_code = 'INTERNAL',
    error_message = $1, duration_ms = $2, end_seq = head.end_seq, chain_prev = head.prev, chain_hash = head.hash
  FROM head, target WHERE t.seq = target.seq
  RETURNING ${RETURNED}`;

export interface PgAuditStoreOptions extends AuditRowLimits {
  logger: Logger;
  /** How often listeners get rows other servers wrote. Default 500 ms. */
  feedIntervalMs?: number;
}

/** `tool_invocations` on PostgreSQL, shared by every server of the fleet. */
export class PgAuditStore implements AuditStore {
  private readonly feed: EndedFeed;
  /** Rows this store began and has not completed: `complete` hashes the ended row from them. */
  private readonly running = new Map<string, StoredInvocation>();

  constructor(
    private readonly db: PgDatabase,
    private readonly options: PgAuditStoreOptions,
  ) {
    this.feed = new EndedFeed({
      read: (after, limit) => this.ended(after, limit),
      last: () => this.lastEndSeq(),
      logger: options.logger,
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
   * The ended row's content is hashed here, from the row held since `begin` (or read first,
   * for a row another store began), and its digest joins the chain in the same statement.
   */
  async complete(id: string, end: InvocationEnd): Promise<StoredInvocation> {
    const begun = this.running.get(id) ?? (await this.get(id));
    this.running.delete(id);
    if (begun?.state !== 'running') throw notRunning(id);
    const errorMessage = end.errorMessage == null ? null : storedMessage(end.errorMessage, this.options);
    const ended = endedInvocation(begun, end, errorMessage);
    const rows = await this.writeRows(id, COMPLETE, [
      ended.durationMs,
      ended.outputBytes,
      ended.sentBytes,
      ended.success,
      ended.errorCode,
      ended.errorMessage,
      ended.policyRule,
      ended.generation,
      ended.jobId,
      id,
      contentDigest(ended),
    ]);
    const row = rows[0];
    if (!row) throw notRunning(id);
    const stored = fromInvocationRow(row);
    this.feed.push(stored);
    return stored;
  }

  /**
   * Marks `running` rows of this host whose process is gone as `interrupted`. Rows of other
   * hosts are theirs to reconcile: a pid means nothing here.
   */
  async reconcile(isAlive: (pid: number) => boolean = pidAlive): Promise<number> {
    const running = await this.db.rows<InvocationRow & { owner_pid: number | null }>(
      STORE,
      `SELECT ${INVOCATION_COLUMNS}, owner_pid FROM tool_invocations
        WHERE state = 'running' AND owner_host = $1 ORDER BY seq`,
      [this.db.host],
    );
    const now = Date.now();
    let marked = 0;
    for (const found of running) {
      const pid = found.owner_pid;
      if (pid !== null && (pid === process.pid || isAlive(pid))) continue;
      const from = fromInvocationRow(found);
      const row: StoredInvocation = {
        ...from,
        state: 'interrupted',
        success: false,
        errorCode: 'INTERNAL',
        errorMessage: interruptedMessage(pid),
        durationMs: Math.max(0, now - from.startedAt),
      };
      const rows = await this.writeRows(from.id, INTERRUPT, [
        row.errorMessage,
        row.durationMs,
        from.id,
        contentDigest(row),
      ]);
      const written = rows[0];
      if (!written) continue;
      marked++;
      this.feed.push(fromInvocationRow(written));
    }
    return marked;
  }

  async fullInput(sha256: string): Promise<string | undefined> {
    const rows = await this.db.rows<{ input: string }>(
      STORE,
      'SELECT input FROM audit_inputs WHERE sha256 = $1',
      [sha256],
    );
    return rows[0]?.input;
  }

  private async write(row: InvocationRecord, state: InvocationState): Promise<StoredInvocation> {
    const { fullInput, ...stored } = prepareInvocation(row, state, this.options);
    const rows = await this.writeRows(row.id, INSERT, [
      ...insertValues(stored, state, stored.success),
      fullInput,
      this.db.host,
      state === 'running' ? null : contentDigest(stored),
    ]);
    const written = rows[0] as { seq: number; end_seq: number | null };
    return { seq: written.seq, endSeq: written.end_seq, ...stored };
  }

  /** One write; a duplicate id is the caller's error, anything else the store's. */
  private async writeRows(
    id: string,
    statement: string | { name: string; text: string },
    params: unknown[],
  ): Promise<InvocationRow[]> {
    try {
      return (
        await this.db.pool.query<InvocationRow>({
          ...(typeof statement === 'string' ? { text: statement } : statement),
          values: params,
        })
      ).rows;
    } catch (e) {
      const err = e as { code?: string; constraint?: string; message?: string };
      if (err.code === '23505' && err.constraint === 'tool_invocations_id_key') {
        throw auditWriteError(id, err.message ?? '', true);
      }
      throw this.db.error(STORE, e);
    }
  }

  /** Rows matching every given filter, newest first unless `ascending`. */
  async query(q: AuditQuery = {}): Promise<StoredInvocation[]> {
    const limit = checkLimit(q.limit);
    const where: string[] = [];
    const params: unknown[] = [];
    const add = (clause: string, value: unknown) => {
      params.push(value);
      where.push(clause.replace('?', `$${params.length}`));
    };
    if (q.tool !== undefined) add('tool = ?', q.tool);
    if (q.caller !== undefined) add('caller = ?', q.caller);
    if (q.principal !== undefined) add('principal = ?', q.principal);
    if (q.parentId !== undefined) add('parent_id = ?', q.parentId);
    if (q.jobId !== undefined) add('job_id = ?', q.jobId);
    if (q.since !== undefined) add('started_at >= ?', checkNumber('since', q.since));
    if (q.afterSeq !== undefined) add('seq > ?', checkNumber('afterSeq', q.afterSeq));
    if (q.beforeSeq !== undefined) add('seq < ?', checkNumber('beforeSeq', q.beforeSeq));
    if (q.failed === true) where.push('NOT success');
    params.push(limit);
    const sql =
      `SELECT ${INVOCATION_COLUMNS} FROM tool_invocations` +
      (where.length > 0 ? ` WHERE ${where.join(' AND ')}` : '') +
      ` ORDER BY seq ${q.ascending ? 'ASC' : 'DESC'} LIMIT $${params.length}`;
    return (await this.db.rows<InvocationRow>(STORE, sql, params)).map(fromInvocationRow);
  }

  async get(id: string): Promise<StoredInvocation | undefined> {
    const rows = await this.db.rows<InvocationRow>(
      STORE,
      { name: 'paddock_audit_get', text: `SELECT ${INVOCATION_COLUMNS} FROM tool_invocations WHERE id = $1` },
      [id],
    );
    return rows[0] ? fromInvocationRow(rows[0]) : undefined;
  }

  async ended(afterEndSeq: number, limit?: number): Promise<StoredInvocation[]> {
    const rows = await this.db.rows<InvocationRow>(
      STORE,
      {
        name: 'paddock_audit_ended',
        text: `SELECT ${INVOCATION_COLUMNS} FROM tool_invocations WHERE end_seq > $1 ORDER BY end_seq LIMIT $2`,
      },
      [checkNumber('afterEndSeq', afterEndSeq), checkLimit(limit)],
    );
    return rows.map(fromInvocationRow);
  }

  async lastEndSeq(): Promise<number> {
    const rows = await this.db.rows<{ n: number }>(
      STORE,
      'SELECT coalesce(max(end_seq), 0)::bigint AS n FROM tool_invocations',
    );
    return rows[0]?.n ?? 0;
  }

  subscribe(listener: (row: StoredInvocation) => void): Disposable {
    return this.feed.subscribe(listener);
  }

  async chained(afterEndSeq: number, limit?: number): Promise<ChainedInvocation[]> {
    const rows = await this.db.rows<ChainedRow>(
      STORE,
      {
        name: 'paddock_audit_chained',
        text: `SELECT ${INVOCATION_COLUMNS}, ${CHAIN_COLUMNS} FROM tool_invocations
          WHERE end_seq > $1 ORDER BY end_seq LIMIT $2`,
      },
      [checkNumber('afterEndSeq', afterEndSeq), checkLimit(limit)],
    );
    return rows.map(fromChainedRow);
  }

  async chainHead(): Promise<ChainHead> {
    const rows = await this.db.rows<{ end_seq: number; hash: string; start_end_seq: number }>(
      STORE,
      'SELECT end_seq, hash, start_end_seq FROM audit_chain WHERE id = 1',
    );
    const head = rows[0];
    if (!head) throw this.db.error(STORE, new Error('the audit_chain head row is missing'));
    return { endSeq: head.end_seq, hash: head.hash, startEndSeq: head.start_end_seq };
  }

  async byChainHash(hash: string): Promise<ChainedInvocation | undefined> {
    const rows = await this.db.rows<ChainedRow>(
      STORE,
      `SELECT ${INVOCATION_COLUMNS}, ${CHAIN_COLUMNS} FROM tool_invocations WHERE chain_hash = $1 LIMIT 1`,
      [hash],
    );
    return rows[0] ? fromChainedRow(rows[0]) : undefined;
  }

  async unlinked(limit?: number): Promise<ChainedInvocation[]> {
    const { startEndSeq } = await this.chainHead();
    const rows = await this.db.rows<ChainedRow>(
      STORE,
      `SELECT ${INVOCATION_COLUMNS}, ${CHAIN_COLUMNS} FROM tool_invocations
        WHERE ${UNLINKED_WHERE.replace('?', '$1')} ORDER BY seq LIMIT $2`,
      [startEndSeq, checkLimit(limit)],
    );
    return rows.map(fromChainedRow);
  }

  /** Stops polling for other servers' rows. */
  close(): void {
    this.feed.close();
  }
}
