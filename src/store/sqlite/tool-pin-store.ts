import type BetterSqlite3 from 'better-sqlite3';
import type { PinWrite, ToolPin, ToolPinStore } from '../tool-pins.js';
import { applyMigrations } from './migrations.js';

interface PinRow {
  server: string;
  tool: string;
  decision: ToolPin['decision'];
  hash: string;
  definition: string;
  decided_at: number;
  decided_by: string;
}

const COLUMNS = 'server, tool, decision, hash, definition, decided_at, decided_by';

/** Tool pins over the `tool_pins` table. */
export class SqliteToolPinStore implements ToolPinStore {
  private readonly select: BetterSqlite3.Statement;
  private readonly upsert: BetterSqlite3.Statement;
  private readonly remove: BetterSqlite3.Statement;
  private readonly anyPinned: BetterSqlite3.Statement;
  private readonly firstSight: (server: string, pins: readonly ToolPin[]) => boolean;
  private readonly applyAll: (writes: readonly PinWrite[]) => void;

  constructor(db: BetterSqlite3.Database) {
    applyMigrations(db);
    this.select = db.prepare(`SELECT ${COLUMNS} FROM tool_pins WHERE server = ? ORDER BY tool, decision`);
    this.upsert = db.prepare(
      `INSERT INTO tool_pins (${COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT (server, tool, decision) DO UPDATE SET hash = excluded.hash,
         definition = excluded.definition, decided_at = excluded.decided_at, decided_by = excluded.decided_by`,
    );
    this.remove = db.prepare('DELETE FROM tool_pins WHERE server = ? AND tool = ? AND decision = ?');
    this.anyPinned = db
      .prepare("SELECT 1 FROM tool_pins WHERE server = ? AND decision = 'pinned' LIMIT 1")
      .pluck();
    const firstSight = db.transaction((server: string, pins: readonly ToolPin[]) => {
      if (this.anyPinned.get(server) !== undefined) return false;
      for (const pin of pins) this.write({ op: 'set', pin });
      return true;
    });
    this.firstSight = (server, pins) => firstSight.immediate(server, pins);
    const applyAll = db.transaction((writes: readonly PinWrite[]) => {
      for (const w of writes) this.write(w);
    });
    this.applyAll = (writes) => applyAll.immediate(writes);
  }

  async list(server: string): Promise<ToolPin[]> {
    return (this.select.all(server) as PinRow[]).map(fromRow);
  }

  async pinFirstSight(server: string, pins: readonly ToolPin[]): Promise<boolean> {
    return this.firstSight(server, pins);
  }

  async apply(writes: readonly PinWrite[]): Promise<void> {
    this.applyAll(writes);
  }

  private write(w: PinWrite): void {
    if (w.op === 'delete') {
      this.remove.run(w.server, w.tool, w.decision);
      return;
    }
    const p = w.pin;
    this.upsert.run(p.server, p.tool, p.decision, p.hash, p.definition, p.decidedAt, p.decidedBy);
  }
}

/** A stored row as a {@link ToolPin}. */
export function fromRow(row: PinRow): ToolPin {
  return {
    server: row.server,
    tool: row.tool,
    decision: row.decision,
    hash: row.hash,
    definition: row.definition,
    decidedAt: Number(row.decided_at),
    decidedBy: row.decided_by,
  };
}
