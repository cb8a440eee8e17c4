/**
 * The PostgreSQL schema of the stores and the step that applies it: once, under an advisory
 * lock, so that of several servers starting together one migrates and the others wait and
 * find the work done. A database migrated by a newer build is refused.
 */
import type pg from 'pg';
import { PaddockError } from '../../shared/errors.js';

/** One step of the schema. Versions are 1, 2, 3… in list order; a released step is never edited. */
export interface PgMigration {
  version: number;
  /** Short snake_case label, stored beside the version so an edited list is caught. */
  name: string;
  sql: string;
}

/**
 * The schema, oldest step first. Times are epoch milliseconds (bigint); JSON lists are text as
 * in the SQLite schema, so both stores hand back the same values.
 */
export const PG_MIGRATIONS: readonly PgMigration[] = [
  {
    version: 1,
    name: 'stores',
    // tool_invocations.end_seq orders rows by the moment their outcome was written. It is taken
    // from its sequence under a transaction-scoped advisory lock (see the audit store), so end
    // seqs become visible in the order they were given and a follower never skips one.
    // owner_host + owner_pid name the process of a running row; a server only reconciles rows
    // of its own host. memories.search is the tsvector the memory store writes (content weight
    // B, tags weight A) behind a GIN index.
    sql: `
      CREATE TABLE tool_invocations (
        seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        end_seq bigint UNIQUE,
        id text NOT NULL UNIQUE,
        started_at bigint NOT NULL,
        duration_ms double precision NOT NULL,
        tool text NOT NULL,
        source text NOT NULL,
        caller text NOT NULL,
        via text NOT NULL,
        parent_id text,
        generation integer,
        job_id text,
        input text NOT NULL,
        input_sha256 text,
        output_bytes bigint NOT NULL,
        sent_bytes bigint,
        success boolean NOT NULL,
        error_code text,
        error_message text,
        policy_rule text,
        approval_id text,
        approver text,
        state text NOT NULL CHECK (state IN ('running', 'ended', 'interrupted')),
        owner_host text,
        owner_pid integer
      );
      CREATE SEQUENCE tool_invocations_end_seq OWNED BY tool_invocations.end_seq;
      CREATE INDEX tool_invocations_tool ON tool_invocations (tool);
      CREATE INDEX tool_invocations_caller ON tool_invocations (caller);
      CREATE INDEX tool_invocations_started_at ON tool_invocations (started_at);
      CREATE INDEX tool_invocations_parent_id ON tool_invocations (parent_id) WHERE parent_id IS NOT NULL;
      CREATE INDEX tool_invocations_job_id ON tool_invocations (job_id) WHERE job_id IS NOT NULL;
      CREATE INDEX tool_invocations_running ON tool_invocations (owner_host) WHERE state = 'running';
      CREATE TABLE audit_inputs (
        sha256 text PRIMARY KEY,
        input text NOT NULL
      );

      CREATE TABLE memories (
        seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        id text NOT NULL UNIQUE,
        namespace text NOT NULL,
        content text NOT NULL,
        tags text NOT NULL DEFAULT '[]',
        created_at bigint NOT NULL,
        search tsvector NOT NULL
      );
      CREATE INDEX memories_namespace_recent ON memories (namespace, created_at, seq);
      CREATE INDEX memories_search ON memories USING gin (search);

      CREATE TABLE launch_links (
        id text PRIMARY KEY,
        created_at bigint NOT NULL,
        profile_id text NOT NULL,
        startup_script text NOT NULL DEFAULT ''
      );
      CREATE INDEX launch_links_created_at ON launch_links (created_at);

      CREATE TABLE agent_runs (
        seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        id text NOT NULL UNIQUE,
        agent text NOT NULL,
        trigger text NOT NULL CHECK (trigger IN ('manual', 'schedule', 'catch-up', 'api')),
        started_at bigint NOT NULL,
        ended_at bigint,
        status text NOT NULL CHECK (status IN ('running', 'succeeded', 'failed', 'limit', 'cancelled')),
        waiting_approval text,
        turns integer NOT NULL DEFAULT 0,
        input_tokens bigint NOT NULL DEFAULT 0,
        output_tokens bigint NOT NULL DEFAULT 0,
        final_answer text,
        error text,
        error_code text,
        input text,
        provider text NOT NULL,
        model text NOT NULL,
        scheduled_at bigint,
        pid integer,
        host text,
        owner text,
        lease_expires_at bigint,
        skills text NOT NULL DEFAULT '[]',
        deliveries text NOT NULL DEFAULT '[]'
      );
      CREATE INDEX agent_runs_agent ON agent_runs (agent, seq);
      CREATE INDEX agent_runs_running ON agent_runs (lease_expires_at) WHERE status = 'running';
      CREATE TABLE agent_schedule_ticks (
        agent text NOT NULL,
        schedule text NOT NULL,
        last_tick_at bigint NOT NULL,
        PRIMARY KEY (agent, schedule)
      );

      CREATE TABLE oauth_clients (
        seq bigint GENERATED ALWAYS AS IDENTITY UNIQUE,
        id text PRIMARY KEY,
        client_id text NOT NULL UNIQUE,
        name text NOT NULL,
        redirect_uris text NOT NULL,
        metadata_url text,
        registered_at bigint NOT NULL
      );
      CREATE TABLE oauth_grants (
        seq bigint GENERATED ALWAYS AS IDENTITY UNIQUE,
        id text PRIMARY KEY,
        client text NOT NULL REFERENCES oauth_clients (id) ON DELETE CASCADE,
        scopes text NOT NULL,
        resource text NOT NULL,
        granted_at bigint NOT NULL,
        last_used_at bigint,
        revoked_at bigint
      );
      CREATE INDEX oauth_grants_client ON oauth_grants (client);
      CREATE TABLE oauth_secrets (
        digest text PRIMARY KEY,
        grant_id text NOT NULL REFERENCES oauth_grants (id) ON DELETE CASCADE,
        kind text NOT NULL CHECK (kind IN ('code', 'access', 'refresh')),
        expires_at bigint NOT NULL,
        used_at bigint,
        redirect_uri text,
        code_challenge text
      );
      CREATE INDEX oauth_secrets_grant ON oauth_secrets (grant_id);

      CREATE TABLE approvals (
        seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        id text NOT NULL UNIQUE,
        invocation_id text NOT NULL,
        tool text NOT NULL,
        source text NOT NULL,
        arguments text NOT NULL,
        arguments_sha256 text NOT NULL,
        caller text NOT NULL,
        via text NOT NULL,
        parent_id text,
        run_id text,
        agent text,
        permission_rule text NOT NULL,
        requested_at bigint NOT NULL,
        expires_at bigint NOT NULL,
        status text NOT NULL
          CHECK (status IN ('pending', 'approved', 'denied', 'expired', 'cancelled', 'interrupted')),
        scope text CHECK (scope IN ('once', 'session', 'always')),
        decided_at bigint,
        decided_by text,
        decided_via text CHECK (decided_via IN ('elicitation', 'dock', 'cli', 'server')),
        reason text,
        owner_host text,
        owner_pid integer
      );
      CREATE INDEX approvals_pending ON approvals (caller) WHERE status = 'pending';
      CREATE TABLE approval_rules (
        seq bigint GENERATED ALWAYS AS IDENTITY UNIQUE,
        id text PRIMARY KEY,
        agent text NOT NULL,
        tool text NOT NULL,
        created_at bigint NOT NULL,
        created_by text NOT NULL,
        approval_id text,
        removed_at bigint,
        removed_by text
      );
      CREATE UNIQUE INDEX approval_rules_active ON approval_rules (agent, tool) WHERE removed_at IS NULL;
    `,
  },
  {
    version: 2,
    name: 'invocation_principal',
    // On whose behalf a call ran: owner, client:<id> (an OAuth client) or agent:<name>.
    // Rows written before this step keep NULL (they were all the owner's or an agent's).
    sql: `
      ALTER TABLE tool_invocations ADD COLUMN principal text;
      CREATE INDEX tool_invocations_principal ON tool_invocations (principal, seq) WHERE principal IS NOT NULL;
    `,
  },
  {
    version: 3,
    name: 'tool_pins',
    // What each upstream MCP tool looked like when it was trusted (pinned) or refused (rejected),
    // shared by the fleet: the canonical JSON of its definition and that text's SHA-256.
    sql: `
      CREATE TABLE tool_pins (
        server text NOT NULL,
        tool text NOT NULL,
        decision text NOT NULL CHECK (decision IN ('pinned', 'rejected')),
        hash text NOT NULL,
        definition text NOT NULL,
        decided_at bigint NOT NULL,
        decided_by text NOT NULL,
        PRIMARY KEY (server, tool, decision)
      );
    `,
  },
  {
    version: 4,
    name: 'audit_chain',
    // One hash chain for the fleet, in end_seq order (see store/audit-chain.ts). The head row
    // gives the end seqs now: a writer updates it in the statement that ends its row and holds
    // its row lock until commit, so end seqs commit in order (as the advisory lock ensured) and
    // each link is computed from the link committed before it. prev keeps the link before the
    // head, so the update can return it. Rows that ended before this step stay unlinked.
    sql: `
      ALTER TABLE tool_invocations ADD COLUMN chain_prev text;
      ALTER TABLE tool_invocations ADD COLUMN chain_hash text;
      CREATE TABLE audit_chain (
        id integer PRIMARY KEY CHECK (id = 1),
        end_seq bigint NOT NULL,
        prev text NOT NULL,
        hash text NOT NULL,
        start_end_seq bigint NOT NULL
      );
      INSERT INTO audit_chain (id, end_seq, prev, hash, start_end_seq)
        SELECT 1, coalesce(max(end_seq), 0), '0000000000000000000000000000000000000000000000000000000000000000', '0000000000000000000000000000000000000000000000000000000000000000', coalesce(max(end_seq), 0)
        FROM tool_invocations;
    `,
  },
  {
    version: 5,
    name: 'call_checkpoints',
    // The checkpoint of the computer taken before a call a person approved, named by the call's
    // row and by its approval. Rows and approvals written before this step keep NULL.
    sql: `
      ALTER TABLE tool_invocations ADD COLUMN checkpoint_id text;
      ALTER TABLE approvals ADD COLUMN checkpoint_id text;
    `,
  },
];

/** Key of the session advisory lock held while migrating (any bigint unique to Paddock). */
export const MIGRATION_LOCK_KEY = 7_061_646_401;

const LEDGER_SQL = `
  CREATE TABLE IF NOT EXISTS schema_migrations (
    version integer PRIMARY KEY,
    name text NOT NULL,
    applied_at bigint NOT NULL
  )`;

/** Throws unless versions run 1, 2, 3… without gaps and names are unique. */
function assertWellFormed(migrations: readonly PgMigration[]): void {
  const names = new Set<string>();
  migrations.forEach((m, i) => {
    if (m.version !== i + 1 || names.has(m.name)) {
      throw new PaddockError(
        'INTERNAL',
        `PostgreSQL migration list is malformed at position ${i + 1} ("${m.name}", version ${m.version}): versions must run 1, 2, 3… with unique names. Fix src/store/postgres/migrations.ts.`,
      );
    }
    names.add(m.name);
  });
}

/** Throws when the database was migrated by a newer build, or by an edited list. */
function assertCompatible(applied: ReadonlyMap<number, string>, migrations: readonly PgMigration[]): void {
  const newest = Math.max(0, ...applied.keys());
  if (newest > migrations.length) {
    throw new PaddockError(
      'INTERNAL',
      `The database was migrated by a newer Paddock (schema version ${newest}; this server knows ${migrations.length}). Upgrade this server to the version the other servers run; never point an older one at it.`,
      { startup: true, store: 'postgres', schemaVersion: newest },
    );
  }
  for (const [version, name] of applied) {
    const known = migrations[version - 1];
    if (known && known.name !== name) {
      throw new PaddockError(
        'INTERNAL',
        `The database recorded schema version ${version} as "${name}" but this build calls it "${known.name}". The migration list was edited after release; restore it and append new steps instead.`,
        { startup: true, store: 'postgres' },
      );
    }
  }
}

/**
 * Brings the database up to the last step of `migrations` on one connection: takes the
 * migration advisory lock (waiting while another server migrates), creates the ledger, checks
 * it, and applies every pending step in one transaction with its ledger rows. Returns how many
 * steps ran (0 when another server did the work first).
 */
export async function migrate(
  client: pg.ClientBase,
  migrations: readonly PgMigration[] = PG_MIGRATIONS,
  now: () => number = Date.now,
): Promise<number> {
  assertWellFormed(migrations);
  await client.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK_KEY]);
  try {
    await client.query(LEDGER_SQL);
    const rows = (
      await client.query<{ version: number; name: string }>(
        'SELECT version, name FROM schema_migrations ORDER BY version',
      )
    ).rows;
    const applied = new Map(rows.map((r) => [r.version, r.name]));
    assertCompatible(applied, migrations);
    const pending = migrations.filter((m) => !applied.has(m.version));
    if (pending.length === 0) return 0;
    await client.query('BEGIN');
    try {
      for (const m of pending) {
        await client.query(m.sql);
        await client.query('INSERT INTO schema_migrations (version, name, applied_at) VALUES ($1, $2, $3)', [
          m.version,
          m.name,
          now(),
        ]);
      }
      await client.query('COMMIT');
    } catch (e) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw e;
    }
    return pending.length;
  } finally {
    await client.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK_KEY]).catch(() => undefined);
  }
}

/** The versions recorded in the ledger, oldest first (empty before the first migration). */
export async function appliedPgMigrations(
  client: pg.ClientBase,
): Promise<{ version: number; name: string }[]> {
  const exists = await client.query("SELECT to_regclass('schema_migrations') IS NOT NULL AS present");
  if (!exists.rows[0]?.present) return [];
  return (await client.query('SELECT version, name FROM schema_migrations ORDER BY version')).rows;
}
