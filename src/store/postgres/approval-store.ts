/**
 * Approval records and rules on PostgreSQL. Ending a record is one conditional UPDATE, so of
 * two decisions (from any servers) exactly one wins.
 */
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
import type { PgDatabase } from './database.js';

/** A row of `approvals` with the process that waits for it. */
interface Row extends ApprovalRow {
  owner_host: string | null;
  owner_pid: number | null;
}

const STORE = 'approval';

/** `approvals` and `approval_rules` on PostgreSQL. */
export class PgApprovalStore implements ApprovalStore {
  constructor(private readonly db: PgDatabase) {}

  async insert(request: ApprovalRequest): Promise<Approval> {
    const rows = await this.db.rows<Row>(
      STORE,
      `INSERT INTO approvals (id, invocation_id, tool, source, arguments, arguments_sha256, caller, via,
        parent_id, run_id, agent, permission_rule, requested_at, expires_at, status, owner_host, owner_pid)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, 'pending', $15, $16) RETURNING *`,
      [
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
        this.db.host,
        process.pid,
      ],
    );
    return approvalFromRow(rows[0] as Row);
  }

  async setCheckpoint(id: string, invocationId: string, checkpointId: string): Promise<Approval | undefined> {
    const rows = await this.db.rows<Row>(
      STORE,
      `UPDATE approvals SET checkpoint_id = $1
        WHERE id = $2 AND invocation_id = $3 AND status = 'approved' AND checkpoint_id IS NULL RETURNING *`,
      [checkpointId, id, invocationId],
    );
    return rows[0] ? approvalFromRow(rows[0]) : undefined;
  }

  async end(id: string, end: ApprovalEnd): Promise<Approval | undefined> {
    const reason = end.reason === null ? null : end.reason.slice(0, MAX_REASON_CHARS);
    const rows = await this.db.rows<Row>(
      STORE,
      `UPDATE approvals SET status = $1, decided_by = $2, decided_via = $3, reason = $4, scope = $5,
        decided_at = $6 WHERE id = $7 AND status = 'pending' RETURNING *`,
      [end.status, end.by, end.via, reason, end.scope, end.at, id],
    );
    return rows[0] ? approvalFromRow(rows[0]) : undefined;
  }

  async get(id: string): Promise<Approval | undefined> {
    const rows = await this.db.rows<Row>(STORE, 'SELECT * FROM approvals WHERE id = $1', [id]);
    return rows[0] ? approvalFromRow(rows[0]) : undefined;
  }

  async ownerPid(id: string): Promise<number | null> {
    const rows = await this.db.rows<{ owner_pid: number | null }>(
      STORE,
      'SELECT owner_pid FROM approvals WHERE id = $1',
      [id],
    );
    return rows[0]?.owner_pid ?? null;
  }

  async pendingCount(caller: string): Promise<number> {
    const rows = await this.db.rows<{ n: number }>(
      STORE,
      `SELECT count(*)::bigint AS n FROM approvals WHERE caller = $1 AND status = 'pending'`,
      [caller],
    );
    return rows[0]?.n ?? 0;
  }

  async list(options: { pendingOnly?: boolean; limit?: number } = {}): Promise<Approval[]> {
    const limit = Math.min(Math.max(1, options.limit ?? 100), 1000);
    const where = options.pendingOnly ? "WHERE status = 'pending'" : '';
    const rows = await this.db.rows<Row>(
      STORE,
      `SELECT * FROM approvals ${where} ORDER BY seq DESC LIMIT $1`,
      [limit],
    );
    return rows.map(approvalFromRow);
  }

  /** Pending approvals of this host's dead processes; another host's pids mean nothing here. */
  async interruptOrphans(at: number, isAlive: (pid: number) => boolean = pidAlive): Promise<Approval[]> {
    const rows = await this.db.rows<Row>(
      STORE,
      `SELECT * FROM approvals WHERE status = 'pending' AND (owner_host = $1 OR owner_host IS NULL) ORDER BY seq`,
      [this.db.host],
    );
    const orphans: Approval[] = [];
    for (const r of rows) {
      if (r.owner_pid !== null && (r.owner_pid === process.pid || isAlive(r.owner_pid))) continue;
      const ended = await this.end(r.id, {
        status: 'interrupted',
        by: null,
        via: 'server',
        reason: 'The server stopped while the call waited for this approval.',
        scope: null,
        at,
      });
      if (ended) orphans.push(approvalFromRow(r));
    }
    return orphans;
  }

  async addRule(
    agent: string,
    tool: string,
    by: string,
    approvalId: string | null,
    at: number,
  ): Promise<ApprovalRule> {
    await this.db.run(
      STORE,
      `INSERT INTO approval_rules (id, agent, tool, created_at, created_by, approval_id) VALUES ($1, $2, $3, $4, $5, $6)
       ON CONFLICT (agent, tool) WHERE removed_at IS NULL DO NOTHING`,
      [randomId('rule', 9), agent, tool, at, by, approvalId],
    );
    return (await this.activeRule(agent, tool)) as ApprovalRule;
  }

  async removeRule(id: string, by: string, at: number): Promise<ApprovalRule> {
    const rows = await this.db.rows<RuleRow>(
      STORE,
      'UPDATE approval_rules SET removed_at = $1, removed_by = $2 WHERE id = $3 AND removed_at IS NULL RETURNING *',
      [at, by, id],
    );
    if (!rows[0]) {
      throw new PaddockError(
        'NOT_FOUND',
        `No active approval rule "${id}"; list them with \`paddock approvals rules\`.`,
        {
          id,
        },
      );
    }
    return ruleFromRow(rows[0]);
  }

  async rule(id: string): Promise<ApprovalRule | undefined> {
    const rows = await this.db.rows<RuleRow>(STORE, 'SELECT * FROM approval_rules WHERE id = $1', [id]);
    return rows[0] ? ruleFromRow(rows[0]) : undefined;
  }

  async activeRule(agent: string, tool: string): Promise<ApprovalRule | undefined> {
    const rows = await this.db.rows<RuleRow>(
      STORE,
      'SELECT * FROM approval_rules WHERE agent = $1 AND tool = $2 AND removed_at IS NULL',
      [agent, tool],
    );
    return rows[0] ? ruleFromRow(rows[0]) : undefined;
  }

  async rules(all = false): Promise<ApprovalRule[]> {
    const where = all ? '' : 'WHERE removed_at IS NULL';
    const rows = await this.db.rows<RuleRow>(
      STORE,
      `SELECT * FROM approval_rules ${where} ORDER BY removed_at IS NOT NULL, created_at, seq`,
    );
    return rows.map(ruleFromRow);
  }
}
