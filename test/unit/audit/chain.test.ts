/**
 * The audit hash chain against real tampering: rows edited, removed, moved and inserted with
 * SQL straight into real SQLite files and a real PostgreSQL cluster, each caught by
 * `verifyChain` at the row where it happened.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import BetterSqlite3 from 'better-sqlite3';
import { type ChainProblemKind, verifyChain } from '../../../src/audit/verify.js';
import { silentLogger } from '../../../src/shared/logger.js';
import { chainLink, contentDigest } from '../../../src/store/audit-chain.js';
import { openStores } from '../../../src/store/open.js';
import type { Stores } from '../../../src/store/stores.js';
import { type PgCluster, startPostgres } from '../../helpers/postgres.js';
import { invocation, started } from '../store/fixtures.js';

/** A database of one kind: its stores (two servers on PostgreSQL), and SQL run behind their back. */
interface Tamperable {
  stores: Stores[];
  sql(text: string, params?: unknown[]): Promise<Record<string, unknown>[]>;
  close(): Promise<void>;
}

type Open = (name: string) => Promise<Tamperable>;

/** Writes 14 rows of every kind: finished, begun and completed (lineage changed), long inputs, failures, interrupted. */
async function fill(db: Tamperable): Promise<void> {
  const [a, b = a] = db.stores as [Stores, Stores?];
  await a.audit.record(invocation({ durationMs: 0.1 + 0.2 }));
  await a.audit.record(invocation({ input: { blob: 'x'.repeat(10_000) } }));
  await Promise.all(
    Array.from({ length: 8 }, async (_, i) => {
      const s = i % 2 === 0 ? a : b;
      const row = started({ tool: `t${i}`, generation: 1 });
      await s.audit.begin(row);
      await s.audit.complete(row.id, {
        durationMs: i * 1.5,
        outputBytes: i,
        success: i !== 3,
        errorCode: i === 3 ? 'TIMEOUT' : null,
        errorMessage: i === 3 ? 'ran long: token=sk-abc123456789012345678901' : null,
        ...(i === 5 ? { generation: 2, jobId: 'g2.job1' } : {}),
      });
    }),
  );
  const lost = started({ tool: 'lost' });
  await a.audit.begin(lost);
  await db.sql('UPDATE tool_invocations SET owner_pid = 999999 WHERE id = $1', [lost.id]);
  assert.equal(await a.audit.reconcile(() => false), 1);
  await b.audit.record(invocation({ success: false, errorCode: 'POLICY_DENIED', errorMessage: 'no' }));
  await a.audit.record(invocation());
  await b.audit.record(invocation());
}

async function endSeqs(db: Tamperable): Promise<{ id: string; end_seq: number }[]> {
  const rows = await db.sql(
    'SELECT id, end_seq FROM tool_invocations WHERE end_seq IS NOT NULL ORDER BY end_seq',
  );
  return rows.map((r) => ({ id: String(r.id), end_seq: Number(r.end_seq) }));
}

async function expectProblem(db: Tamperable, kind: ChainProblemKind, endSeq: number, id: string | null) {
  const report = await verifyChain(db.stores[0]!.audit, { pageSize: 4 });
  assert.equal(report.ok, false, 'the tampering is caught');
  assert.deepEqual(
    { kind: report.problem?.kind, endSeq: report.problem?.endSeq, id: report.problem?.id },
    { kind, endSeq, id },
    report.problem?.message,
  );
}

function chainSuite(kind: string, open: Open): void {
  describe(`the audit chain on ${kind}`, () => {
    let n = 0;
    const withDb = async (fn: (db: Tamperable, rows: { id: string; end_seq: number }[]) => Promise<void>) => {
      const db = await open(`chain_${process.pid}_${++n}`);
      try {
        await fill(db);
        await fn(db, await endSeqs(db));
      } finally {
        await db.close();
      }
    };

    it('links every row that ended, in end seq order, and verifies whole', () =>
      withDb(async (db, rows) => {
        assert.equal(rows.length, 14);
        assert.deepEqual(
          rows.map((r) => r.end_seq),
          Array.from({ length: 14 }, (_, i) => i + 1),
          'end seqs are dense',
        );
        const report = await verifyChain(db.stores[0]!.audit, { pageSize: 4 });
        assert.equal(report.problem, null);
        assert.equal(report.checked, 14);
        assert.equal(report.head.endSeq, 14);
        const ranged = await verifyChain(db.stores[0]!.audit, { fromEndSeq: 5, toEndSeq: 9 });
        assert.deepEqual([ranged.ok, ranged.checked, ranged.fromEndSeq, ranged.toEndSeq], [true, 5, 5, 9]);
      }));

    it('names a row whose content was edited', () =>
      withDb(async (db, rows) => {
        await db.sql(`UPDATE tool_invocations SET input = '{"path":"/etc/shadow"}' WHERE end_seq = 6`);
        await expectProblem(db, 'changed', 6, rows[5]!.id);
        const outside = await verifyChain(db.stores[0]!.audit, { fromEndSeq: 8 });
        assert.equal(outside.ok, true, 'a range after the edit still verifies');
      }));

    it('names a row whose outcome was flipped and whose own link was recomputed', () =>
      withDb(async (db, rows) => {
        const [row] = await db.stores[0]!.audit.chained(3, 1);
        const forged = { ...row!, success: !row!.success };
        const hash = chainLink(row!.chainPrev!, 4, contentDigest(forged));
        await db.sql(
          `UPDATE tool_invocations SET success = ${kind === 'SQLite' ? (forged.success ? 1 : 0) : forged.success}, chain_hash = $1 WHERE end_seq = 4`,
          [hash],
        );
        await expectProblem(db, 'changed', 4, rows[3]!.id);
      }));

    it(
      kind === 'SQLite'
        ? 'names the end seq of a removed row (a removed tail is left to the signed heads)'
        : 'names the end seq of a removed row, and a removed tail (the head row still names it)',
      () =>
        withDb(async (db) => {
          await db.sql('DELETE FROM tool_invocations WHERE end_seq = 9');
          await expectProblem(db, 'removed', 9, null);
          await db.sql('DELETE FROM tool_invocations WHERE end_seq >= 9');
          if (kind === 'SQLite') {
            // the head is the last row on SQLite: only a signed head (audit-verify.test.ts) sees the cut
            const report = await verifyChain(db.stores[0]!.audit);
            assert.deepEqual([report.ok, report.head.endSeq], [true, 8]);
          } else await expectProblem(db, 'truncated', 9, null);
        }),
    );

    it('names a row moved out of its place', () =>
      withDb(async (db, rows) => {
        await db.sql('UPDATE tool_invocations SET end_seq = -1 WHERE end_seq = 7');
        await db.sql('UPDATE tool_invocations SET end_seq = 7 WHERE end_seq = 8');
        await db.sql('UPDATE tool_invocations SET end_seq = 8 WHERE end_seq = -1');
        await expectProblem(db, 'reordered', 7, rows[7]!.id);
      }));

    it('names a row inserted with a valid-looking link, renumbering the rows after it', () =>
      withDb(async (db) => {
        const [base] = await db.stores[0]!.audit.chained(9, 1);
        await db.sql('UPDATE tool_invocations SET end_seq = end_seq + 100 WHERE end_seq > 10');
        await db.sql('UPDATE tool_invocations SET end_seq = end_seq - 99 WHERE end_seq > 100');
        const [copied] = await db.stores[0]!.audit.chained(11, 1);
        const forged = { ...copied!, id: 'inv_forged', tool: 'deploy_prod' };
        const hash = chainLink(base!.chainHash!, 11, contentDigest(forged));
        await db.sql(
          `INSERT INTO tool_invocations (id, started_at, duration_ms, tool, source, caller, via, parent_id, generation, job_id, input,
            output_bytes, sent_bytes, success, error_code, error_message, policy_rule, state, input_sha256, approval_id, approver,
            end_seq, chain_prev, chain_hash)
           SELECT 'inv_forged', started_at, duration_ms, 'deploy_prod', source, caller, via, parent_id, generation, job_id, input,
            output_bytes, sent_bytes, success, error_code, error_message, policy_rule, state, input_sha256, approval_id, approver,
            11, $1, $2 FROM tool_invocations WHERE end_seq = 12`,
          [base!.chainHash, hash],
        );
        await expectProblem(db, 'inserted', 11, 'inv_forged');
      }));

    it('verifies rows that name a checkpoint beside rows from before the field, and names either kind when its checkpoint is edited', () =>
      withDb(async (db, rows) => {
        const [a, b = a] = db.stores as [Stores, Stores?];
        const approved = started({ tool: 'run_command', approvalId: 'apr_1', checkpointId: 'ck_a' });
        await a.audit.begin(approved);
        await b.audit.complete(approved.id, { durationMs: 2, outputBytes: 1, success: true });
        await b.audit.record(invocation({ approvalId: 'apr_2', checkpointId: 'ck_b' }));
        await a.audit.record(invocation());
        const report = await verifyChain(a.audit, { pageSize: 4 });
        assert.equal(report.problem, null);
        assert.equal(report.checked, 17);
        await db.sql("UPDATE tool_invocations SET checkpoint_id = 'ck_other' WHERE end_seq = 15");
        await expectProblem(db, 'changed', 15, approved.id);
        await db.sql("UPDATE tool_invocations SET checkpoint_id = 'ck_a' WHERE end_seq = 15");
        assert.equal((await verifyChain(a.audit)).ok, true, 'the row as it was verifies again');
        await db.sql("UPDATE tool_invocations SET checkpoint_id = 'ck_planted' WHERE end_seq = 2");
        await expectProblem(db, 'changed', 2, rows[1]!.id);
      }));

    it('names an ended row written outside the chain', () =>
      withDb(async (db) => {
        await db.sql(
          `INSERT INTO tool_invocations (id, started_at, duration_ms, tool, source, caller, via, input, output_bytes, success, state)
           VALUES ('inv_outside', 1, 0, 'x', 'builtin', 'cli', 'direct', '{}', 0, ${kind === 'SQLite' ? 1 : 'true'}, 'ended')`,
        );
        await expectProblem(db, 'inserted', 0, 'inv_outside');
      }));
  });
}

describe('the content digest of a row', () => {
  const row = {
    id: 'inv_pinned',
    startedAt: 1_767_225_600_000,
    durationMs: 12.5,
    tool: 'run_command',
    source: 'computer',
    caller: 'mcp:s1',
    via: 'direct' as const,
    parentId: null,
    generation: 3,
    jobId: 'g3.job1',
    input: '{"script":"rm -rf /workspace/project"}',
    inputSha256: null,
    outputBytes: 42,
    sentBytes: null,
    success: true,
    errorCode: null,
    errorMessage: null,
    policyRule: null,
    approvalId: 'apr_1',
    approver: 'cli',
    principal: 'owner',
    state: 'ended' as const,
  };

  it('is unchanged for a row without a checkpoint, so rows written before the field still verify', () => {
    // computed by the build before checkpoint ids existed
    const before = '2b00b167ff3e38ee51beb1dd36c7b9ed9252963347aa84c17728d43d24962a16';
    assert.equal(contentDigest(row), before);
    assert.equal(contentDigest({ ...row, checkpointId: null }), before);
  });

  it('covers the checkpoint a row names', () => {
    const named = contentDigest({ ...row, checkpointId: 'ck_1' });
    assert.notEqual(named, contentDigest(row));
    assert.notEqual(named, contentDigest({ ...row, checkpointId: 'ck_2' }));
  });
});

const dir = mkdtempSync(join(tmpdir(), 'paddock-chain-'));
after(() => rmSync(dir, { recursive: true, force: true }));

chainSuite('SQLite', async (name) => {
  const stores = await openStores(
    { url: `sqlite:${name}.db` },
    { dataDir: dir, logger: silentLogger(), serverId: 's' },
  );
  const raw = new BetterSqlite3(join(dir, `${name}.db`));
  return {
    stores: [stores],
    sql: async (text, params = []) => {
      const sql = text.replace(/\$\d+/g, '?');
      const statement = raw.prepare(sql);
      if (statement.reader) return statement.all(...params) as Record<string, unknown>[];
      statement.run(...params);
      return [];
    },
    close: async () => {
      raw.close();
      await stores.close();
    },
  };
});

describe('on PostgreSQL', () => {
  let cluster: PgCluster;
  before(async () => {
    cluster = await startPostgres();
  });
  after(async () => {
    await cluster?.cleanup();
  });
  chainSuite('PostgreSQL', async (name) => {
    const url = await cluster.createDatabase(name);
    const open = () =>
      openStores(
        { url },
        { dataDir: dir, logger: silentLogger(), env: { PADDOCK_STORE_PASSWORD: cluster.password } },
      );
    const a = await open();
    const b = await open();
    return {
      stores: [a, b],
      sql: (text, params) => cluster.admin(text, params, name),
      close: async () => {
        await a.close();
        await b.close();
      },
    };
  });
});
