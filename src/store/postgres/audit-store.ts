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
import {
  type AuditRowLimits,
  auditWriteError,
  checkLimit,
  checkNumber,
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
import type { PgDatabase } from './database.js';

/** Key of the transaction lock every write of an end seq holds until it commits. */
const END_SEQ_LOCK_KEY = 7_061_646_402;

const STORE = 'audit';

// The end seq is taken after the transaction lock and the lock is held until commit, so end
// seqs commit in the order they are given: a follower that read up to N never finds a row
// below N later. The whole input (when the row keeps a preview) is stored in the same statement.
const INSERT = {
  name: 'paddock_audit_insert',
  text: `WITH full_input AS (
      INSERT INTO audit_inputs (sha256, input) SELECT $20::text, $24::text WHERE $20::text IS NOT NULL
      ON CONFLICT (sha256) DO NOTHING
    ), end_lock AS (
      SELECT pg_advisory_xact_lock(${END_SEQ_LOCK_KEY}) WHERE $18::text <> 'running'
    )
    INSERT INTO tool_invocations (id, started_at, duration_ms, tool, source, caller, via, parent_id,
      generation, job_id, input, output_bytes, sent_bytes, success, error_code, error_message,
      policy_rule, state, owner_pid, input_sha256, approval_id, approver, principal, owner_host, end_seq)
    SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20,
      $21, $22, $23, $25,
      CASE WHEN $18::text = 'running' THEN NULL ELSE nextval('tool_invocations_end_seq') END
    FROM (SELECT 1) AS one LEFT JOIN end_lock ON true
    RETURNING seq, end_seq`,
};

const COMPLETE = {
  name: 'paddock_audit_complete',
  text: `WITH end_lock AS (SELECT pg_advisory_xact_lock(${END_SEQ_LOCK_KEY}))
    UPDATE tool_invocations SET state = 'ended', duration_ms = $1, output_bytes = $2, sent_bytes = $3,
      success = $4, error_code = $5, error_message = $6, policy_rule = $7,
      generation = coalesce($8, generation), job_id = coalesce($9, job_id),
      end_seq = nextval('tool_invocations_end_seq')
    FROM end_lock WHERE id = $10 AND state = 'running'
    RETURNING ${INVOCATION_COLUMNS.split(', ')
      .map((c) => `tool_invocations.${c}`)
      .join(', ')}`,
};

const INTERRUPT = `WITH end_lock AS (SELECT pg_advisory_xact_lock(${END_SEQ_LOCK_KEY}))
  UPDATE tool_invocations SET state = 'interrupted', success = false, error_code = 'INTERNAL',
    error_message = $1, duration_ms = greatest(0, $2 - started_at),
    end_seq = nextval('tool_invocations_end_seq')
  FROM end_lock WHERE id = $3 AND state = 'running'
  RETURNING ${INVOCATION_COLUMNS.split(', ')
    .map((c) => `tool_invocations.${c}`)
    .join(', ')}`;

export interface PgAuditStoreOptions extends AuditRowLimits {
  logger: Logger;
  /** How often listeners get rows other servers wrote. Default 500 ms. */
  feedIntervalMs?: number;
}

/** `tool_invocations` on PostgreSQL, shared by every server of the fleet. */
export class PgAuditStore implements AuditStore {
  private readonly feed: EndedFeed;

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
    return this.write(
      { ...row, durationMs: 0, outputBytes: 0, success: false, errorCode: null, errorMessage: null },
      'running',
    );
  }

  async complete(id: string, end: InvocationEnd): Promise<StoredInvocation> {
    const rows = await this.writeRows(id, COMPLETE, [
      end.durationMs,
      end.outputBytes,
      end.sentBytes ?? null,
      end.success,
      end.errorCode ?? null,
      end.errorMessage == null ? null : storedMessage(end.errorMessage, this.options),
      end.policyRule ?? null,
      end.generation ?? null,
      end.jobId ?? null,
      id,
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
    const running = await this.db.rows<{ id: string; owner_pid: number | null }>(
      STORE,
      "SELECT id, owner_pid FROM tool_invocations WHERE state = 'running' AND owner_host = $1 ORDER BY seq",
      [this.db.host],
    );
    let marked = 0;
    for (const { id, owner_pid: pid } of running) {
      if (pid !== null && (pid === process.pid || isAlive(pid))) continue;
      const rows = await this.writeRows(id, INTERRUPT, [interruptedMessage(pid), Date.now(), id]);
      const row = rows[0];
      if (!row) continue;
      marked++;
      this.feed.push(fromInvocationRow(row));
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

  /** Stops polling for other servers' rows. */
  close(): void {
    this.feed.close();
  }
}
