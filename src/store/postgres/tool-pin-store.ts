/** Tool pins on PostgreSQL: one set for the fleet, so a review on one server holds on all. */
import type pg from 'pg';
import type { PinWrite, ToolPin, ToolPinStore } from '../tool-pins.js';
import type { PgDatabase } from './database.js';

const STORE = 'tool pin';
const COLUMNS = 'server, tool, decision, hash, definition, decided_at, decided_by';
const UPSERT = `INSERT INTO tool_pins (${COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7)
  ON CONFLICT (server, tool, decision) DO UPDATE SET hash = excluded.hash,
    definition = excluded.definition, decided_at = excluded.decided_at, decided_by = excluded.decided_by`;

interface PinRow {
  server: string;
  tool: string;
  decision: ToolPin['decision'];
  hash: string;
  definition: string;
  decided_at: number | string;
  decided_by: string;
}

/** `tool_pins` on PostgreSQL. */
export class PgToolPinStore implements ToolPinStore {
  constructor(private readonly db: PgDatabase) {}

  async list(server: string): Promise<ToolPin[]> {
    const rows = await this.db.rows<PinRow>(
      STORE,
      `SELECT ${COLUMNS} FROM tool_pins WHERE server = $1 ORDER BY tool, decision`,
      [server],
    );
    return rows.map((r) => ({
      server: r.server,
      tool: r.tool,
      decision: r.decision,
      hash: r.hash,
      definition: r.definition,
      decidedAt: Number(r.decided_at),
      decidedBy: r.decided_by,
    }));
  }

  /** Serialised per server by a transaction lock, so two servers seeing it first pin one list. */
  async pinFirstSight(server: string, pins: readonly ToolPin[]): Promise<boolean> {
    return this.db.transaction(STORE, async (client) => {
      await client.query("SELECT pg_advisory_xact_lock(hashtextextended('paddock.tool_pins:' || $1, 0))", [
        server,
      ]);
      const existing = await client.query(
        "SELECT 1 FROM tool_pins WHERE server = $1 AND decision = 'pinned' LIMIT 1",
        [server],
      );
      if (existing.rowCount) return false;
      for (const pin of pins) await write(client, { op: 'set', pin });
      return true;
    });
  }

  async apply(writes: readonly PinWrite[]): Promise<void> {
    await this.db.transaction(STORE, async (client) => {
      for (const w of writes) await write(client, w);
    });
  }
}

async function write(client: pg.PoolClient, w: PinWrite): Promise<void> {
  if (w.op === 'delete') {
    await client.query('DELETE FROM tool_pins WHERE server = $1 AND tool = $2 AND decision = $3', [
      w.server,
      w.tool,
      w.decision,
    ]);
    return;
  }
  const p = w.pin;
  await client.query(UPSERT, [p.server, p.tool, p.decision, p.hash, p.definition, p.decidedAt, p.decidedBy]);
}
