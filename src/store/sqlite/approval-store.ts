import type BetterSqlite3 from 'better-sqlite3';
import { PaddockError } from '../../shared/errors.js';
import { randomId } from '../../shared/ids.js';
import { pidAlive } from '../../shared/pid.js';
import { type ApprovalRow, approvalFromRow, type RuleRow, ruleFromRow } from '../approval-rows.js';
import {
  type Approval,
  type ApprovalEnd,
  type ApprovalRequest,
  type ApprovalRule,
  type ApprovalStore,
  MAX_REASON_CHARS,
} from '../approvals.js';
import { applyMigrations } from './migrations.js';

/**
 * Approval records and rules in SQLite (`approvals`, `approval_rules`). Ending a record is one
 * conditional update (`WHERE status = 'pending'`), so of two decisions exactly one wins.
 */
export class SqliteApprovalStore implements ApprovalStore {
  private readonly insertRow: BetterSqlite3.Statement;
  private readonly endRow: BetterSqlite3.Statement;
  private readonly byId: BetterSqlite3.Statement;
  private readonly pendingOf: BetterSqlite3.Statement;
  private readonly setCheckpointRow: BetterSqlite3.Statement;

  constructor(private readonly db: BetterSqlite3.Database) {
    applyMigrations(db);
    this.insertRow = db.prepare(`INSERT INTO approvals (id, invocation_id, tool, source, arguments,
      arguments_sha256, caller, via, parent_id, run_id, agent, permission_rule, requested_at, expires_at,
      status, owner_pid) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'pending', ?)`);
    this.endRow = db.prepare(`UPDATE approvals SET status = ?, decided_by = ?, decided_via = ?, reason = ?,
      scope = ?, decided_at = ? WHERE id = ? AND status = 'pending'`);
    this.byId = db.prepare('SELECT * FROM approvals WHERE id = ?');
    this.setCheckpointRow = db.prepare(`UPDATE approvals SET checkpoint_id = ?
      WHERE id = ? AND invocation_id = ? AND status = 'approved' AND checkpoint_id IS NULL`);
    this.pendingOf = db.prepare(
      "SELECT count(*) AS n FROM approvals WHERE caller = ? AND status = 'pending'",
    );
  }

  /** Writes a new pending approval. */
  async insert(request: ApprovalRequest): Promise<Approval> {
    this.insertRow.run(
      request.id,
      request.invocationId,
      request.tool,
      request.source,
      request.arguments,
      request.argumentsSha256,
      request.caller,
      request.via,
      request.parentId,
      request.runId,
      request.agent,
      request.permissionRule,
      request.requestedAt,
      request.expiresAt,
      process.pid,
    );
    return (await this.get(request.id))!;
  }

  /** Ends a pending approval; undefined when it was not pending (someone else ended it first). */
  async end(id: string, end: ApprovalEnd): Promise<Approval | undefined> {
    const reason = end.reason === null ? null : end.reason.slice(0, MAX_REASON_CHARS);
    const changes = this.endRow.run(end.status, end.by, end.via, reason, end.scope, end.at, id).changes;
    return changes === 1 ? this.get(id) : undefined;
  }

  async get(id: string): Promise<Approval | undefined> {
    const row = this.byId.get(id) as ApprovalRow | undefined;
    return row ? approvalFromRow(row) : undefined;
  }

  async setCheckpoint(id: string, invocationId: string, checkpointId: string): Promise<Approval | undefined> {
    const changes = this.setCheckpointRow.run(checkpointId, id, invocationId).changes;
    return changes === 1 ? this.get(id) : undefined;
  }

  /** The process whose call waits for this approval. */
  async ownerPid(id: string): Promise<number | null> {
    const row = this.db.prepare('SELECT owner_pid FROM approvals WHERE id = ?').get(id) as
      | { owner_pid: number | null }
      | undefined;
    return row?.owner_pid ?? null;
  }

  /** How many approvals of this caller are pending. */
  async pendingCount(caller: string): Promise<number> {
    return (this.pendingOf.get(caller) as { n: number }).n;
  }

  /** Newest first; `pending` only, or every status. */
  async list(options: { pendingOnly?: boolean; limit?: number } = {}): Promise<Approval[]> {
    const limit = Math.min(Math.max(1, options.limit ?? 100), 1000);
    const where = options.pendingOnly ? "WHERE status = 'pending'" : '';
    return (
      this.db
        .prepare(`SELECT * FROM approvals ${where} ORDER BY seq DESC LIMIT ?`)
        .all(limit) as ApprovalRow[]
    ).map(approvalFromRow);
  }

  /**
   * Marks pending approvals whose process is gone as `interrupted` (the server stopped while
   * their calls waited). Approvals of a live process (a running server, while a one-shot CLI
   * command opens the same database) are left alone. Returns the approvals it marked.
   */
  async interruptOrphans(at: number, isAlive: (pid: number) => boolean = pidAlive): Promise<Approval[]> {
    const rows = this.db.prepare("SELECT * FROM approvals WHERE status = 'pending'").all() as (ApprovalRow & {
      owner_pid: number | null;
    })[];
    const orphans = rows
      .filter((r) => r.owner_pid === null || (r.owner_pid !== process.pid && !isAlive(r.owner_pid)))
      .map(approvalFromRow);
    for (const a of orphans) {
      await this.end(a.id, {
        status: 'interrupted',
        by: null,
        via: 'server',
        reason: 'The server stopped while the call waited for this approval.',
        scope: null,
        at,
      });
    }
    return orphans;
  }

  /** Writes "always allow `tool` for `agent`"; an active rule for the pair is kept as it is. */
  async addRule(
    agent: string,
    tool: string,
    by: string,
    approvalId: string | null,
    at: number,
  ): Promise<ApprovalRule> {
    this.db
      .prepare(
        `INSERT INTO approval_rules (id, agent, tool, created_at, created_by, approval_id) VALUES (?, ?, ?, ?, ?, ?)
         ON CONFLICT (agent, tool) WHERE removed_at IS NULL DO NOTHING`,
      )
      .run(randomId('rule', 9), agent, tool, at, by, approvalId);
    return (await this.activeRule(agent, tool))!;
  }

  /** Removes a rule (kept, marked removed). Throws NOT_FOUND for an unknown or removed rule. */
  async removeRule(id: string, by: string, at: number): Promise<ApprovalRule> {
    const changes = this.db
      .prepare('UPDATE approval_rules SET removed_at = ?, removed_by = ? WHERE id = ? AND removed_at IS NULL')
      .run(at, by, id).changes;
    if (changes !== 1) {
      throw new PaddockError(
        'NOT_FOUND',
        `No active approval rule "${id}"; list them with \`paddock approvals rules\`.`,
        { id },
      );
    }
    return (await this.rule(id))!;
  }

  async rule(id: string): Promise<ApprovalRule | undefined> {
    const row = this.db.prepare('SELECT * FROM approval_rules WHERE id = ?').get(id) as RuleRow | undefined;
    return row ? ruleFromRow(row) : undefined;
  }

  async activeRule(agent: string, tool: string): Promise<ApprovalRule | undefined> {
    const row = this.db
      .prepare('SELECT * FROM approval_rules WHERE agent = ? AND tool = ? AND removed_at IS NULL')
      .get(agent, tool) as RuleRow | undefined;
    return row ? ruleFromRow(row) : undefined;
  }

  /** Rules, active first; removed ones too when `all`. */
  async rules(all = false): Promise<ApprovalRule[]> {
    const where = all ? '' : 'WHERE removed_at IS NULL';
    return (
      this.db
        .prepare(`SELECT * FROM approval_rules ${where} ORDER BY removed_at IS NOT NULL, created_at`)
        .all() as RuleRow[]
    ).map(ruleFromRow);
  }
}
