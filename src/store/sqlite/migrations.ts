import type BetterSqlite3 from 'better-sqlite3';
import { PaddockError } from '../../shared/errors.js';
import { CALL_CHECKPOINTS_MIGRATION } from './migrations-checkpoints.js';
import { AUDIT_CHAIN_MIGRATION, TOOL_PINS_MIGRATION } from './migrations-trust.js';

/** One step of the schema. Versions are 1, 2, 3… in list order; a released step is never edited. */
export interface Migration {
  version: number;
  /** Short snake_case label, stored beside the version so an edited or reordered list is caught. */
  name: string;
  /** Statements run with `db.exec`, inside the transaction that records the step. */
  sql: string;
}

/**
 * The whole schema of Paddock's database, oldest step first. Later modules (agent runs,
 * approvals, jobs) append their tables here as new versions; existing entries never change.
 */
export const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: 'tool_invocations',
    // seq is the rowid (max + 1 on insert): monotonic as long as the newest row is never
    // deleted, which retention (oldest rows first) respects. AUTOINCREMENT would add a
    // sqlite_sequence write to every insert (about 4 µs of a ~30 µs record).
    sql: `
      CREATE TABLE tool_invocations (
        seq INTEGER PRIMARY KEY,
        id TEXT NOT NULL UNIQUE,
        started_at INTEGER NOT NULL,
        duration_ms REAL NOT NULL,
        tool TEXT NOT NULL,
        source TEXT NOT NULL,
        caller TEXT NOT NULL,
        via TEXT NOT NULL,
        parent_id TEXT,
        generation INTEGER,
        job_id TEXT,
        input TEXT NOT NULL,
        output_bytes INTEGER NOT NULL,
        success INTEGER NOT NULL CHECK (success IN (0, 1)),
        error_code TEXT,
        error_message TEXT,
        policy_rule TEXT
      );
      CREATE INDEX tool_invocations_tool ON tool_invocations (tool);
      CREATE INDEX tool_invocations_caller ON tool_invocations (caller);
      CREATE INDEX tool_invocations_started_at ON tool_invocations (started_at);
      CREATE INDEX tool_invocations_parent_id ON tool_invocations (parent_id) WHERE parent_id IS NOT NULL;
      CREATE INDEX tool_invocations_job_id ON tool_invocations (job_id) WHERE job_id IS NOT NULL;
    `,
  },
  {
    version: 2,
    name: 'memories',
    sql: `
      CREATE TABLE memories (
        seq INTEGER PRIMARY KEY,
        id TEXT NOT NULL UNIQUE,
        namespace TEXT NOT NULL,
        content TEXT NOT NULL,
        tags TEXT NOT NULL DEFAULT '[]',
        created_at INTEGER NOT NULL
      );
      CREATE INDEX memories_namespace_recent ON memories (namespace, created_at, seq);
      CREATE VIRTUAL TABLE memories_fts USING fts5 (
        content, tags,
        content = 'memories', content_rowid = 'seq',
        tokenize = 'unicode61 remove_diacritics 2'
      );
      CREATE TRIGGER memories_after_insert AFTER INSERT ON memories BEGIN
        INSERT INTO memories_fts (rowid, content, tags) VALUES (new.seq, new.content, new.tags);
      END;
      CREATE TRIGGER memories_after_delete AFTER DELETE ON memories BEGIN
        INSERT INTO memories_fts (memories_fts, rowid, content, tags)
          VALUES ('delete', old.seq, old.content, old.tags);
      END;
      CREATE TRIGGER memories_after_update AFTER UPDATE ON memories BEGIN
        INSERT INTO memories_fts (memories_fts, rowid, content, tags)
          VALUES ('delete', old.seq, old.content, old.tags);
        INSERT INTO memories_fts (rowid, content, tags) VALUES (new.seq, new.content, new.tags);
      END;
    `,
  },
  {
    version: 3,
    name: 'launch_links',
    sql: `
      CREATE TABLE launch_links (
        id TEXT PRIMARY KEY,
        created_at INTEGER NOT NULL,
        profile_id TEXT NOT NULL,
        startup_script TEXT NOT NULL DEFAULT ''
      );
      CREATE INDEX launch_links_created_at ON launch_links (created_at);
    `,
  },
  {
    version: 4,
    name: 'agent_runs',
    // A run's tool calls are the tool_invocations rows whose parent_id is the run id, and
    // (through the tool channel) their descendants; agent_schedule_ticks keeps the last tick
    // per schedule so missed ticks after downtime can be detected and caught up at most once.
    sql: `
      CREATE TABLE agent_runs (
        seq INTEGER PRIMARY KEY,
        id TEXT NOT NULL UNIQUE,
        agent TEXT NOT NULL,
        trigger TEXT NOT NULL CHECK (trigger IN ('manual', 'schedule', 'catch-up', 'api')),
        started_at INTEGER NOT NULL,
        ended_at INTEGER,
        status TEXT NOT NULL CHECK (status IN ('running', 'succeeded', 'failed', 'limit', 'cancelled')),
        turns INTEGER NOT NULL DEFAULT 0,
        input_tokens INTEGER NOT NULL DEFAULT 0,
        output_tokens INTEGER NOT NULL DEFAULT 0,
        final_answer TEXT,
        error TEXT,
        error_code TEXT,
        input TEXT,
        provider TEXT NOT NULL,
        model TEXT NOT NULL,
        scheduled_at INTEGER,
        pid INTEGER,
        skills TEXT NOT NULL DEFAULT '[]',
        deliveries TEXT NOT NULL DEFAULT '[]'
      );
      CREATE INDEX agent_runs_agent ON agent_runs (agent, seq);
      CREATE INDEX agent_runs_running ON agent_runs (agent) WHERE status = 'running';
      CREATE TABLE agent_schedule_ticks (
        agent TEXT NOT NULL,
        schedule TEXT NOT NULL,
        last_tick_at INTEGER NOT NULL,
        PRIMARY KEY (agent, schedule)
      );
    `,
  },
  {
    version: 5,
    name: 'invocation_state',
    // A call's row is written when it starts executing (state 'running', owner_pid = the
    // process running it) and completed when it ends; a process that dies leaves 'running'
    // rows that the next start marks 'interrupted'. Rows from before this step are 'ended'.
    sql: `
      ALTER TABLE tool_invocations ADD COLUMN state TEXT NOT NULL DEFAULT 'ended'
        CHECK (state IN ('running', 'ended', 'interrupted'));
      ALTER TABLE tool_invocations ADD COLUMN owner_pid INTEGER;
      CREATE INDEX tool_invocations_running ON tool_invocations (owner_pid) WHERE state = 'running';
    `,
  },
  {
    version: 6,
    name: 'invocation_inputs',
    // An input longer than the row's preview is kept whole (redacted JSON) in audit_inputs,
    // keyed by its SHA-256, which the row names; equal inputs share one copy.
    sql: `
      ALTER TABLE tool_invocations ADD COLUMN input_sha256 TEXT;
      CREATE TABLE audit_inputs (
        sha256 TEXT PRIMARY KEY,
        input TEXT NOT NULL
      ) WITHOUT ROWID;
    `,
  },
  {
    version: 7,
    name: 'oauth',
    // MCP clients signed in with OAuth: a client (registered dynamically or known by its
    // metadata document URL), the grants a person approved for it, and the codes and tokens
    // of those grants. Codes and tokens are stored as SHA-256 digests, never as issued.
    sql: `
      CREATE TABLE oauth_clients (
        id TEXT PRIMARY KEY,
        client_id TEXT NOT NULL UNIQUE,
        name TEXT NOT NULL,
        redirect_uris TEXT NOT NULL,
        metadata_url TEXT,
        registered_at INTEGER NOT NULL
      );
      CREATE TABLE oauth_grants (
        id TEXT PRIMARY KEY,
        client TEXT NOT NULL REFERENCES oauth_clients (id) ON DELETE CASCADE,
        scopes TEXT NOT NULL,
        resource TEXT NOT NULL,
        granted_at INTEGER NOT NULL,
        last_used_at INTEGER,
        revoked_at INTEGER
      );
      CREATE INDEX oauth_grants_client ON oauth_grants (client);
      CREATE TABLE oauth_secrets (
        digest TEXT PRIMARY KEY,
        grant_id TEXT NOT NULL REFERENCES oauth_grants (id) ON DELETE CASCADE,
        kind TEXT NOT NULL CHECK (kind IN ('code', 'access', 'refresh')),
        expires_at INTEGER NOT NULL,
        used_at INTEGER,
        redirect_uri TEXT,
        code_challenge TEXT
      );
      CREATE INDEX oauth_secrets_grant ON oauth_secrets (grant_id);
    `,
  },
  {
    version: 8,
    name: 'approvals',
    // A person's decision on one `ask` call: bound to the exact arguments (canonical JSON and
    // its SHA-256), with the caller and lineage, an expiry that counts as a denial, and who
    // decided. approval_rules are the "always allow this tool for this agent" rules a decision
    // wrote (removed, never deleted). Audit rows name the approval and its approver; a run
    // that waits for one names it in waiting_approval.
    sql: `
      CREATE TABLE approvals (
        seq INTEGER PRIMARY KEY,
        id TEXT NOT NULL UNIQUE,
        invocation_id TEXT NOT NULL,
        tool TEXT NOT NULL,
        source TEXT NOT NULL,
        arguments TEXT NOT NULL,
        arguments_sha256 TEXT NOT NULL,
        caller TEXT NOT NULL,
        via TEXT NOT NULL,
        parent_id TEXT,
        run_id TEXT,
        agent TEXT,
        permission_rule TEXT NOT NULL,
        requested_at INTEGER NOT NULL,
        expires_at INTEGER NOT NULL,
        status TEXT NOT NULL
          CHECK (status IN ('pending', 'approved', 'denied', 'expired', 'cancelled', 'interrupted')),
        scope TEXT CHECK (scope IN ('once', 'session', 'always')),
        decided_at INTEGER,
        decided_by TEXT,
        decided_via TEXT CHECK (decided_via IN ('elicitation', 'dock', 'cli', 'server')),
        reason TEXT,
        owner_pid INTEGER
      );
      CREATE INDEX approvals_pending ON approvals (caller) WHERE status = 'pending';
      CREATE TABLE approval_rules (
        id TEXT PRIMARY KEY,
        agent TEXT NOT NULL,
        tool TEXT NOT NULL,
        created_at INTEGER NOT NULL,
        created_by TEXT NOT NULL,
        approval_id TEXT,
        removed_at INTEGER,
        removed_by TEXT
      );
      CREATE UNIQUE INDEX approval_rules_active ON approval_rules (agent, tool) WHERE removed_at IS NULL;
      ALTER TABLE tool_invocations ADD COLUMN approval_id TEXT;
      ALTER TABLE tool_invocations ADD COLUMN approver TEXT;
      ALTER TABLE agent_runs ADD COLUMN waiting_approval TEXT;
    `,
  },
  {
    version: 9,
    name: 'invocation_sent_bytes',
    // Bytes a call sent onward, apart from its input: an egress connection's bytes from the
    // program to the upstream (its row is written when it opens, and completed with the
    // counts when it ends). NULL for tool calls.
    sql: `
      ALTER TABLE tool_invocations ADD COLUMN sent_bytes INTEGER;
    `,
  },
  {
    version: 10,
    name: 'followers_and_leases',
    // end_seq orders rows by the moment their outcome was written (max + 1 under SQLite's one
    // writer), so a follower in another process reads every ended row once; rows that ended
    // before this step take their seq. A run's owner (a server id) renews lease_expires_at
    // while it runs; a run whose lease passed is marked failed by another server.
    sql: `
      ALTER TABLE tool_invocations ADD COLUMN end_seq INTEGER;
      UPDATE tool_invocations SET end_seq = seq WHERE state <> 'running';
      CREATE UNIQUE INDEX tool_invocations_end_seq ON tool_invocations (end_seq);
      ALTER TABLE agent_runs ADD COLUMN owner TEXT;
      ALTER TABLE agent_runs ADD COLUMN lease_expires_at INTEGER;
      CREATE INDEX agent_runs_lease ON agent_runs (lease_expires_at) WHERE status = 'running';
    `,
  },
  {
    version: 11,
    name: 'running_rows_by_end_seq',
    // A row is running exactly while its end_seq is NULL, and the unique index on end_seq
    // already holds those NULLs (first, in seq order): it finds the running rows, and the
    // partial index that did the same cost one more page in the WAL at each call's start and end.
    sql: `
      DROP INDEX tool_invocations_running;
    `,
  },
  {
    version: 12,
    name: 'invocation_principal',
    // On whose behalf a call ran: owner, client:<id> (an OAuth client) or agent:<name>.
    // Rows written before this step keep NULL (they were all the owner's or an agent's).
    sql: `
      ALTER TABLE tool_invocations ADD COLUMN principal TEXT;
      CREATE INDEX tool_invocations_principal ON tool_invocations (principal, seq) WHERE principal IS NOT NULL;
    `,
  },
  TOOL_PINS_MIGRATION,
  AUDIT_CHAIN_MIGRATION,
  CALL_CHECKPOINTS_MIGRATION,
];

const LEDGER_SQL = `
  CREATE TABLE IF NOT EXISTS schema_migrations (
    version INTEGER PRIMARY KEY,
    name TEXT NOT NULL,
    applied_at INTEGER NOT NULL
  )`;

/** Throws unless versions run 1, 2, 3… without gaps and names are unique. */
function assertWellFormed(migrations: readonly Migration[]): void {
  const names = new Set<string>();
  migrations.forEach((m, i) => {
    if (m.version !== i + 1 || names.has(m.name)) {
      throw new PaddockError(
        'INTERNAL',
        `Migration list is malformed at position ${i + 1} ("${m.name}", version ${m.version}): versions must run 1, 2, 3… with unique names. Fix src/store/sqlite/migrations.ts.`,
      );
    }
    names.add(m.name);
  });
}

/** Throws when the database was migrated by a different (newer or edited) schema list. */
function assertCompatible(applied: ReadonlyMap<number, string>, migrations: readonly Migration[]): void {
  for (const [version, name] of applied) {
    const known = migrations[version - 1];
    if (!known) {
      throw new PaddockError(
        'INTERNAL',
        `The database has schema version ${version} ("${name}"), newer than this build knows (${migrations.length}). Upgrade Paddock, or point PADDOCK_DATA at another directory.`,
      );
    }
    if (known.name !== name) {
      throw new PaddockError(
        'INTERNAL',
        `The database recorded schema version ${version} as "${name}" but this build calls it "${known.name}". The migration list was edited after release; restore it and append new steps instead.`,
      );
    }
  }
}

function readLedger(db: BetterSqlite3.Database): Map<number, string> {
  const rows = db.prepare('SELECT version, name FROM schema_migrations ORDER BY version').all() as {
    version: number;
    name: string;
  }[];
  return new Map(rows.map((r) => [r.version, r.name]));
}

/**
 * Brings the database up to the last step of `migrations`. Pending steps run in one
 * `BEGIN IMMEDIATE` transaction (so two processes opening the same file never both apply a
 * step) and are recorded in `schema_migrations`; `PRAGMA user_version` mirrors the latest
 * version. Either every pending step applies or none does. Returns how many steps ran.
 */
export function applyMigrations(
  db: BetterSqlite3.Database,
  migrations: readonly Migration[] = MIGRATIONS,
): number {
  assertWellFormed(migrations);
  // Up to date: check the ledger without taking the write lock.
  if (migrations.length > 0 && db.pragma('user_version', { simple: true }) === migrations.length) {
    assertCompatible(readLedger(db), migrations);
    return 0;
  }
  const run = db.transaction(() => {
    db.exec(LEDGER_SQL);
    const applied = readLedger(db);
    assertCompatible(applied, migrations);
    const record = db.prepare('INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)');
    let count = 0;
    for (const m of migrations) {
      if (applied.has(m.version)) continue;
      db.exec(m.sql);
      record.run(m.version, m.name, Date.now());
      count++;
    }
    if (count > 0) db.pragma(`user_version = ${migrations.length}`);
    return count;
  });
  return run.immediate();
}

/** The versions recorded in `schema_migrations`, oldest first (empty for a fresh file). */
export function appliedMigrations(db: BetterSqlite3.Database): { version: number; name: string }[] {
  db.exec(LEDGER_SQL);
  return [...readLedger(db)].map(([version, name]) => ({ version, name }));
}
