/**
 * The tool pin store: what each upstream MCP tool looked like when a person last trusted it.
 * A pin holds the canonical JSON of the tool's wire definition and its SHA-256; a rejection
 * holds a definition the person refused. Shared by every server of a fleet (PostgreSQL), so a
 * change accepted on one server is accepted on all.
 */

/** `pinned`: the definition callers may use. `rejected`: a definition a person refused. */
export type PinDecision = 'pinned' | 'rejected';

/** One stored decision about one tool of one server. */
export interface ToolPin {
  /** The server's name in mcp_servers.yaml. */
  server: string;
  /** The tool's name as the server lists it (not the `<server>_` name). */
  tool: string;
  decision: PinDecision;
  /** SHA-256 (hex) of `definition`. */
  hash: string;
  /** Canonical JSON of the tool's definition: name, title, description, schemas, annotations. */
  definition: string;
  /** Epoch milliseconds. */
  decidedAt: number;
  /** Who decided: `first-sight`, `cli`, `dock:<user>`. */
  decidedBy: string;
}

/** A change to apply in one transaction: set a pinned or rejected definition, or drop a pin. */
export type PinWrite =
  | { op: 'set'; pin: ToolPin }
  | { op: 'delete'; server: string; tool: string; decision: PinDecision };

/** Pins of upstream tools; every method is one transaction. */
export interface ToolPinStore {
  /** Every decision stored for `server` (both kinds), in tool name order. */
  list(server: string): Promise<ToolPin[]>;
  /**
   * Pins `pins` only when the server has no pinned tool yet (its first sight). Returns true when
   * they were stored; false when pins already existed (another server pinned first: re-read them).
   */
  pinFirstSight(server: string, pins: readonly ToolPin[]): Promise<boolean>;
  /** Applies the writes together (a review's accept or reject). */
  apply(writes: readonly PinWrite[]): Promise<void>;
}
