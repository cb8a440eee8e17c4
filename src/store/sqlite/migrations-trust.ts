/**
 * The SQLite steps of tool pins and of the audit hash chain, each self-contained (they only add
 * tables and columns), listed in migrations.ts.
 */
/** A step as migrations.ts lists it (the same shape as its `Migration`). */
interface Step {
  version: number;
  name: string;
  sql: string;
}

/** Pins of upstream MCP tools (see store/tool-pins.ts). */
export const TOOL_PINS_MIGRATION: Step = {
  version: 13,
  name: 'tool_pins',
  // What each upstream MCP tool looked like when it was trusted (pinned) or refused (rejected):
  // the canonical JSON of its definition and that text's SHA-256.
  sql: `
    CREATE TABLE tool_pins (
      server TEXT NOT NULL,
      tool TEXT NOT NULL,
      decision TEXT NOT NULL CHECK (decision IN ('pinned', 'rejected')),
      hash TEXT NOT NULL,
      definition TEXT NOT NULL,
      decided_at INTEGER NOT NULL,
      decided_by TEXT NOT NULL,
      PRIMARY KEY (server, tool, decision)
    ) WITHOUT ROWID;
  `,
};

/** The audit hash chain (see store/audit-chain.ts). */
export const AUDIT_CHAIN_MIGRATION: Step = {
  version: 14,
  name: 'audit_chain',
  // Every row that ends joins a hash chain in end_seq order (see store/audit-chain.ts): its
  // link and the link before it. The head is the last ended row; audit_chain records where the
  // chain started — rows that ended before this step stay unlinked.
  sql: `
    ALTER TABLE tool_invocations ADD COLUMN chain_prev TEXT;
    ALTER TABLE tool_invocations ADD COLUMN chain_hash TEXT;
    CREATE TABLE audit_chain (
      id INTEGER PRIMARY KEY CHECK (id = 1),
      start_end_seq INTEGER NOT NULL
    );
    INSERT INTO audit_chain (id, start_end_seq) SELECT 1, coalesce(max(end_seq), 0) FROM tool_invocations;
  `,
};
