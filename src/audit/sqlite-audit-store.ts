import { createHash } from 'node:crypto';
import type BetterSqlite3 from 'better-sqlite3';
import type { Disposable } from '../shared/disposable.js';
import { PaddockError } from '../shared/errors.js';
import { type Logger, silentLogger } from '../shared/logger.js';
import { pidAlive } from '../shared/pid.js';
import { truncateUtf8 } from '../shared/text.js';
import { applyMigrations } from './migrations.js';
import { MAX_INPUT_BYTES, redactedJson, redactSecrets, redactText } from './redact.js';
import type {
  AuditQuery,
  AuditStore,
  InvocationEnd,
  InvocationRecord,
  InvocationStart,
  InvocationState,
  StoredInvocation,
  Via,
} from './types.js';

/** Rows returned by a query when no limit is given. */
export const DEFAULT_QUERY_LIMIT = 100;
/** Largest `limit` a query accepts; page further with `afterSeq` / `beforeSeq`. */
export const MAX_QUERY_LIMIT = 10_000;

export interface SqliteAuditStoreOptions {
  /** Receives `audit.listener_failed` when a subscriber throws. */
  logger?: Logger;
  /** Cap for the stored input text, in UTF-8 bytes. Default 4 KiB. */
  maxInputBytes?: number;
  /** Cap for the stored error message, in UTF-8 bytes. Default 4 KiB. */
  maxErrorMessageBytes?: number;
}

interface Row {
  seq: number;
  id: string;
  started_at: number;
  duration_ms: number;
  tool: string;
  source: string;
  caller: string;
  via: string;
  parent_id: string | null;
  generation: number | null;
  job_id: string | null;
  input: string;
  output_bytes: number;
  sent_bytes: number | null;
  success: number;
  error_code: string | null;
  error_message: string | null;
  policy_rule: string | null;
  state: string;
  input_sha256: string | null;
  approval_id: string | null;
  approver: string | null;
}

const COLUMNS =
  'seq, id, started_at, duration_ms, tool, source, caller, via, parent_id, generation, job_id, input, ' +
  'output_bytes, sent_bytes, success, error_code, error_message, policy_rule, state, input_sha256, approval_id, approver';

const INSERT_SQL = `INSERT INTO tool_invocations (id, started_at, duration_ms, tool, source, caller, via,
  parent_id, generation, job_id, input, output_bytes, sent_bytes, success, error_code, error_message,
  policy_rule, state, owner_pid, input_sha256, approval_id, approver)
  VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`;

const COMPLETE_SQL = `UPDATE tool_invocations SET state = 'ended', duration_ms = ?, output_bytes = ?,
  sent_bytes = ?, success = ?, error_code = ?, error_message = ?, policy_rule = ?,
  generation = coalesce(?, generation), job_id = coalesce(?, job_id)
  WHERE id = ? AND state = 'running'`;

const INTERRUPT_SQL = `UPDATE tool_invocations SET state = 'interrupted', success = 0,
  error_code = 'INTERNAL', error_message = ?, duration_ms = max(0, ? - started_at)
  WHERE id = ? AND state = 'running'`;

/**
 * The audit log in SQLite (`tool_invocations`). `record` is one synchronous autocommit insert
 * through a prepared statement: when it returns, the row is committed (it survives a crash of
 * the process; see `openDatabase` for OS crashes). Inputs are redacted and truncated first.
 * The connection belongs to the caller; pass one from `openDatabase`.
 */
export class SqliteAuditStore implements AuditStore {
  private readonly db: BetterSqlite3.Database;
  private readonly logger: Logger;
  private readonly maxInputBytes: number;
  private readonly maxErrorMessageBytes: number;
  private readonly insert: BetterSqlite3.Statement;
  private readonly insertInput: BetterSqlite3.Statement;
  private readonly inputBySha: BetterSqlite3.Statement;
  private readonly completeRow: BetterSqlite3.Statement;
  private readonly interruptRow: BetterSqlite3.Statement;
  private readonly runningRows: BetterSqlite3.Statement;
  private readonly byId: BetterSqlite3.Statement;
  private readonly queries = new Map<string, BetterSqlite3.Statement>();
  private readonly listeners = new Set<(row: StoredInvocation) => void>();

  constructor(db: BetterSqlite3.Database, options: SqliteAuditStoreOptions = {}) {
    applyMigrations(db);
    this.db = db;
    this.logger = options.logger ?? silentLogger();
    this.maxInputBytes = options.maxInputBytes ?? MAX_INPUT_BYTES;
    this.maxErrorMessageBytes = options.maxErrorMessageBytes ?? MAX_INPUT_BYTES;
    this.insert = db.prepare(INSERT_SQL);
    this.insertInput = db.prepare('INSERT OR IGNORE INTO audit_inputs (sha256, input) VALUES (?, ?)');
    this.inputBySha = db.prepare('SELECT input FROM audit_inputs WHERE sha256 = ?');
    this.completeRow = db.prepare(COMPLETE_SQL);
    this.interruptRow = db.prepare(INTERRUPT_SQL);
    this.runningRows = db.prepare(
      "SELECT id, owner_pid FROM tool_invocations WHERE state = 'running' ORDER BY seq",
    );
    this.byId = db.prepare(`SELECT ${COLUMNS} FROM tool_invocations WHERE id = ?`);
  }

  /** Writes one finished row and returns it as stored; listeners run after the commit. */
  record(row: InvocationRecord): StoredInvocation {
    const stored = this.write(row, 'ended');
    this.notify(stored);
    return stored;
  }

  /**
   * Writes the row of a call that starts executing (state `running`, owned by this process).
   * Listeners see the row once, when it ends.
   */
  begin(row: InvocationStart): StoredInvocation {
    return this.write(
      { ...row, durationMs: 0, outputBytes: 0, success: false, errorCode: null, errorMessage: null },
      'running',
    );
  }

  complete(id: string, end: InvocationEnd): StoredInvocation {
    let changes: number;
    try {
      changes = this.completeRow.run(
        end.durationMs,
        end.outputBytes,
        end.sentBytes ?? null,
        end.success ? 1 : 0,
        end.errorCode ?? null,
        end.errorMessage == null ? null : this.message(end.errorMessage),
        end.policyRule ?? null,
        end.generation ?? null,
        end.jobId ?? null,
        id,
      ).changes;
    } catch (e) {
      throw insertError(id, e);
    }
    const stored = changes === 1 ? this.get(id) : undefined;
    if (!stored) {
      throw new PaddockError(
        'NOT_FOUND',
        `No running audit row "${id}" to complete; begin the call before completing it, and complete it once.`,
        { id },
      );
    }
    this.notify(stored);
    return stored;
  }

  reconcile(isAlive: (pid: number) => boolean = pidAlive): number {
    const now = Date.now();
    let marked = 0;
    for (const row of this.runningRows.all() as { id: string; owner_pid: number | null }[]) {
      const pid = row.owner_pid;
      if (pid !== null && (pid === process.pid || isAlive(pid))) continue;
      const message = `The server (pid ${pid ?? 'unknown'}) stopped before this call ended; its effects may have happened in part. Check the computer's state before retrying.`;
      if (this.interruptRow.run(message, now, row.id).changes !== 1) continue;
      marked++;
      const stored = this.get(row.id);
      if (stored) this.notify(stored);
    }
    return marked;
  }

  fullInput(sha256: string): string | undefined {
    return (this.inputBySha.get(sha256) as { input: string } | undefined)?.input;
  }

  /** An error message as stored: redacted by shape, then cut. */
  private message(text: string): string {
    return truncateUtf8(redactText(text, redactSecrets), this.maxErrorMessageBytes);
  }

  private write(row: InvocationRecord, state: InvocationState): StoredInvocation {
    const json = safeJson(row.input);
    const preview = truncateUtf8(json, this.maxInputBytes);
    const inputSha256 = preview === json ? null : createHash('sha256').update(json).digest('hex');
    const stored: Omit<StoredInvocation, 'seq'> = {
      id: row.id,
      startedAt: row.startedAt,
      durationMs: row.durationMs,
      tool: row.tool,
      source: row.source,
      caller: row.caller,
      via: row.via,
      parentId: row.parentId ?? null,
      generation: row.generation ?? null,
      jobId: row.jobId ?? null,
      input: preview,
      inputSha256,
      outputBytes: row.outputBytes,
      sentBytes: row.sentBytes ?? null,
      success: row.success,
      errorCode: row.errorCode ?? null,
      errorMessage: row.errorMessage == null ? null : this.message(row.errorMessage),
      policyRule: row.policyRule ?? null,
      approvalId: row.approvalId ?? null,
      approver: row.approver ?? null,
      state,
    };
    let seq: number;
    try {
      if (inputSha256) this.insertInput.run(inputSha256, json);
      const info = this.insert.run(
        stored.id,
        stored.startedAt,
        stored.durationMs,
        stored.tool,
        stored.source,
        stored.caller,
        stored.via,
        stored.parentId,
        stored.generation,
        stored.jobId,
        stored.input,
        stored.outputBytes,
        stored.sentBytes,
        stored.success ? 1 : 0,
        stored.errorCode,
        stored.errorMessage,
        stored.policyRule,
        state,
        process.pid,
        inputSha256,
        stored.approvalId,
        stored.approver,
      );
      seq = Number(info.lastInsertRowid);
    } catch (e) {
      throw insertError(row.id, e);
    }
    return { seq, ...stored };
  }

  /** Rows matching every given filter, newest first unless `ascending`. */
  query(q: AuditQuery = {}): StoredInvocation[] {
    const limit = checkLimit(q.limit);
    const where: string[] = [];
    const params: unknown[] = [];
    const add = (clause: string, value: unknown) => {
      where.push(clause);
      params.push(value);
    };
    if (q.tool !== undefined) add('tool = ?', q.tool);
    if (q.caller !== undefined) add('caller = ?', q.caller);
    if (q.parentId !== undefined) add('parent_id = ?', q.parentId);
    if (q.jobId !== undefined) add('job_id = ?', q.jobId);
    if (q.since !== undefined) add('started_at >= ?', checkNumber('since', q.since));
    if (q.afterSeq !== undefined) add('seq > ?', checkNumber('afterSeq', q.afterSeq));
    if (q.beforeSeq !== undefined) add('seq < ?', checkNumber('beforeSeq', q.beforeSeq));
    if (q.failed === true) where.push('success = 0');
    const sql =
      `SELECT ${COLUMNS} FROM tool_invocations` +
      (where.length > 0 ? ` WHERE ${where.join(' AND ')}` : '') +
      ` ORDER BY seq ${q.ascending ? 'ASC' : 'DESC'} LIMIT ?`;
    let statement = this.queries.get(sql);
    if (!statement) {
      statement = this.db.prepare(sql);
      this.queries.set(sql, statement);
    }
    return (statement.all(...params, limit) as Row[]).map(fromRow);
  }

  /** The row with this invocation id, if any. */
  get(id: string): StoredInvocation | undefined {
    const row = this.byId.get(id) as Row | undefined;
    return row ? fromRow(row) : undefined;
  }

  /**
   * Calls `listener` with every row recorded through this store, right after its commit.
   * A listener that throws (or returns a rejected promise) is logged and never affects
   * `record` or the other listeners.
   */
  subscribe(listener: (row: StoredInvocation) => void): Disposable {
    this.listeners.add(listener);
    return { dispose: () => void this.listeners.delete(listener) };
  }

  private notify(row: StoredInvocation): void {
    if (this.listeners.size === 0) return;
    for (const listener of [...this.listeners]) {
      try {
        const result: unknown = listener(row);
        if (result instanceof Promise) result.catch((e: unknown) => this.listenerFailed(row, e));
      } catch (e) {
        this.listenerFailed(row, e);
      }
    }
  }

  private listenerFailed(row: StoredInvocation, e: unknown): void {
    this.logger.warn('audit.listener_failed', {
      invocationId: row.id,
      error: e instanceof Error ? e.message : String(e),
    });
  }
}

/** Redacts and serialises an input; one whose getters or `toJSON` throw is stored as a placeholder. */
function safeJson(input: unknown): string {
  try {
    return redactedJson(input);
  } catch {
    return JSON.stringify('[unserializable input]');
  }
}

function fromRow(r: Row): StoredInvocation {
  return {
    seq: r.seq,
    id: r.id,
    startedAt: r.started_at,
    durationMs: r.duration_ms,
    tool: r.tool,
    source: r.source,
    caller: r.caller,
    via: r.via as Via,
    parentId: r.parent_id,
    generation: r.generation,
    jobId: r.job_id,
    input: r.input,
    outputBytes: r.output_bytes,
    sentBytes: r.sent_bytes,
    success: r.success === 1,
    errorCode: r.error_code,
    errorMessage: r.error_message,
    policyRule: r.policy_rule,
    state: r.state as InvocationState,
    inputSha256: r.input_sha256,
    approvalId: r.approval_id,
    approver: r.approver,
  };
}

function checkLimit(limit: number | undefined): number {
  if (limit === undefined) return DEFAULT_QUERY_LIMIT;
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_QUERY_LIMIT) {
    throw new PaddockError(
      'INVALID_ARGUMENT',
      `limit must be a whole number from 1 to ${MAX_QUERY_LIMIT}, got ${limit}. Ask for fewer rows and page with afterSeq.`,
      { argument: 'limit' },
    );
  }
  return limit;
}

const NUMBER_HINTS: Record<string, string> = {
  since: 'Pass epoch milliseconds; parseSince turns "1h" or an ISO time into one.',
  afterSeq: 'Pass the seq of the last row already seen.',
  beforeSeq: 'Pass the seq of the oldest row already seen.',
};

function checkNumber(name: string, value: number): number {
  if (typeof value !== 'number' || !Number.isFinite(value)) {
    throw new PaddockError(
      'INVALID_ARGUMENT',
      `${name} must be a finite number, got ${String(value)}. ${NUMBER_HINTS[name] ?? ''}`.trim(),
      {
        argument: name,
      },
    );
  }
  return value;
}

function insertError(id: string, e: unknown): PaddockError {
  const reason = e instanceof Error ? e.message : String(e);
  if (reason.includes('UNIQUE constraint failed: tool_invocations.id')) {
    return new PaddockError(
      'INVALID_ARGUMENT',
      `An audit row with id "${id}" already exists; give every invocation a fresh id.`,
      { id },
    );
  }
  return new PaddockError(
    'INTERNAL',
    `Could not write the audit row: ${reason}. Check that the data directory is writable and has free space, then retry.`,
  );
}
